/** The live status page (placeholder until the full page lands): the snapshot, refreshed by server-sent events. */
export function statusPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>groupwire status</title></head>
<body><pre id="status">loading…</pre><script>
const token = new URLSearchParams(location.search).get('token');
const events = new EventSource('status/events' + (token ? '?token=' + encodeURIComponent(token) : ''));
events.addEventListener('status', (event) => { document.getElementById('status').textContent = JSON.stringify(JSON.parse(event.data), null, 2); });
</script></body></html>`;
}
