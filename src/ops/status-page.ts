import { STATUS_PAGE_SCRIPT } from './status-page-script.js';
import { STATUS_PAGE_STYLE } from './status-page-style.js';

/**
 * The live status page (docs/operations.md): one self-contained document, its style and script inline,
 * nothing loaded from elsewhere (it works offline and under the endpoint's strict Content-Security-Policy).
 * It carries no data itself: everything shown arrives over /status/events (the `status` events'
 * snapshots), so the HTML is the same for every caller and holds nothing secret.
 */
export function statusPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>groupwire status</title>
<style>${STATUS_PAGE_STYLE}</style>
</head>
<body data-live="true">
<header>
  <h1>groupwire</h1>
  <span id="ready" class="pill idle" data-ready="unknown">connecting…</span>
  <span class="fact">version <b id="version">–</b></span>
  <span class="fact">up <b id="uptime">–</b></span>
  <span class="fact">pid <b id="pid">–</b></span>
  <span class="fact">memory <b id="memory">–</b></span>
  <span class="fact">event loop lag <b id="loop">–</b></span>
  <span class="fact" id="live">updated <b id="updated">–</b></span>
</header>
<div id="banner" role="status"></div>
<main>
  <div id="bots"></div>
  <p id="no-bots" class="empty" hidden>No bots.</p>
  <section><h2>Gateways</h2><div id="gateways"></div><p id="no-gateways" class="empty">No gateways.</p></section>
  <section><h2>Backlogs</h2><div id="backlogs"><p class="empty">No sides yet.</p></div></section>
  <section><h2>Last reload</h2><div id="reload"><p class="empty">No reload since the start.</p></div></section>
  <section><h2>Recent warnings and errors</h2><div id="errors"><p class="empty">None since the start.</p></div></section>
  <noscript><p>This page needs JavaScript to show the live status; /status.json has the same data.</p></noscript>
</main>
<script>${STATUS_PAGE_SCRIPT}</script>
</body>
</html>
`;
}
