/**
 * The status page's script (inlined; plain ES2017 for any browser, no build step). It reads the
 * `status` events of /status/events (the whole snapshot, when it changed) and its `tick` events (the
 * clock and process figures only, merged into the last snapshot) and updates the page in place: rows are kept by key and only
 * their text changes, so nothing flickers and a selection survives. Every text from the snapshot goes
 * in through textContent (subjects, errors and details are user-controlled), never as HTML.
 */
import { STATUS_PAGE_GATEWAYS_SCRIPT } from './status-page-gateways-script.js';

/**
 * (The gateways' part, with the relays' sides, is in status-page-gateways-script.ts, inlined below.)
 */
export const STATUS_PAGE_SCRIPT = String.raw`'use strict';
(function () {
  var token = new URLSearchParams(location.search).get('token');
  // Relative to the page, so it works behind a reverse proxy's path prefix too.
  var eventsUrl = 'status/events' + (token ? '?token=' + encodeURIComponent(token) : '');
  var STATE_CLASS = { open: 'ok', connecting: 'warn', reconnecting: 'warn', idle: 'idle', closed: 'idle', waiting_to_join: 'idle', stopped: 'idle' };
  var $ = function (id) { return document.getElementById(id); };
  var lastEventAt = 0;
  var lastSnapshotAt = '';
  var shownErrors = '';
  var shownBacklogs = '';
  var shownReload = '';
  var lastSnapshot = null;

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function setText(node, text, title) {
    text = text === undefined || text === null ? '' : String(text);
    if (node.textContent !== text) node.textContent = text;
    if (title !== undefined && node.title !== title) node.title = title;
  }
  function setClass(node, className) { if (node.className !== className) node.className = className; }
  function setData(node, name, value) { if (node.dataset[name] !== value) node.dataset[name] = value; }

  function duration(seconds) {
    seconds = Math.max(0, Math.round(seconds));
    if (seconds < 60) return seconds + ' s';
    var m = Math.floor(seconds / 60), h = Math.floor(m / 60), d = Math.floor(h / 24);
    var and = function (count, unit) { return count > 0 ? ' ' + count + ' ' + unit : ''; };
    if (d > 0) return d + ' d' + and(h % 24, 'h');
    if (h > 0) return h + ' h' + and(m % 60, 'min');
    return m + ' min' + and(seconds % 60, 's');
  }
  // Relative to the snapshot's own clock: a browser whose clock is off still reads the right ages.
  function ago(iso, now) {
    if (!iso) return '';
    var seconds = (Date.parse(now) - Date.parse(iso)) / 1000;
    return seconds < 2 ? 'just now' : duration(seconds) + ' ago';
  }
  function clock(iso) { return iso ? new Date(iso).toLocaleTimeString() : ''; }
  function full(iso) { return iso ? new Date(iso).toLocaleString() : ''; }
  function megabytes(bytes) { return (bytes / 1048576).toFixed(0) + ' MB'; }

  // One child per key, in the snapshot's order; a child no longer there is removed.
  function reconcile(container, items, keyOf, create, update) {
    var existing = new Map();
    Array.prototype.forEach.call(container.children, function (child) { existing.set(child.dataset.key, child); });
    var previous = null;
    items.forEach(function (item) {
      var key = keyOf(item);
      var node = existing.get(key);
      if (node) existing.delete(key);
      else { node = create(item); node.dataset.key = key; }
      update(node, item);
      var wanted = previous ? previous.nextSibling : container.firstChild;
      if (node !== wanted) container.insertBefore(node, wanted);
      previous = node;
    });
    existing.forEach(function (node) { node.remove(); });
  }

  function table(headings, numeric) {
    var wrap = el('div', 'table-scroll');
    var t = el('table');
    var head = el('tr');
    headings.forEach(function (heading, i) { head.appendChild(el('th', numeric.indexOf(i) >= 0 ? 'num' : '', heading)); });
    t.appendChild(el('thead')).appendChild(head);
    var body = t.appendChild(el('tbody'));
    wrap.appendChild(t);
    return { wrap: wrap, body: body };
  }
  function row(cells, numeric, wrapped) {
    var tr = el('tr');
    for (var i = 0; i < cells; i += 1) tr.appendChild(el('td', numeric.indexOf(i) >= 0 ? 'num' : wrapped.indexOf(i) >= 0 ? 'wrap' : ''));
    return tr;
  }
  function pill(td, text, className) {
    var span = td.firstChild || td.appendChild(el('span'));
    setClass(span, 'pill ' + className);
    setText(span, text);
  }

  var CHAT_HEADINGS = ['Chat', 'Group', 'State', 'Since', 'Lag', 'Last message', 'Outbox', 'Reconnects', 'Last trouble'];
  var CHAT_NUMERIC = [4, 6, 7];
  var PLUGIN_HEADINGS = ['Instance', 'Plugin', 'Handled', 'Errors', 'Timeouts', 'Connection', 'Queues'];
  var PLUGIN_NUMERIC = [2, 3, 4];

  function createBot() {
    var section = el('section');
    section.parts = { name: section.appendChild(el('h2')), reason: section.appendChild(el('p', 'reason')) };
    section.appendChild(el('h3', '', 'Chats'));
    var chats = table(CHAT_HEADINGS, CHAT_NUMERIC);
    section.appendChild(chats.wrap);
    section.parts.noChats = section.appendChild(el('p', 'empty', 'No chats.'));
    section.appendChild(el('h3', '', 'Plugins'));
    var plugins = table(PLUGIN_HEADINGS, PLUGIN_NUMERIC);
    section.appendChild(plugins.wrap);
    section.parts.noPlugins = section.appendChild(el('p', 'empty', 'No plugins.'));
    section.parts.relayHeading = section.appendChild(el('h3', '', 'Relay sides'));
    var relaySides = table(RELAY_SIDE_HEADINGS, RELAY_SIDE_NUMERIC);
    section.parts.relayTable = section.appendChild(relaySides.wrap);
    section.parts.chats = chats.body;
    section.parts.plugins = plugins.body;
    section.parts.relaySides = relaySides.body;
    return section;
  }
  function updateBot(section, bot, now) {
    var parts = section.parts;
    setText(parts.name, bot.name);
    setText(parts.reason, bot.phase + (bot.reason ? ': ' + bot.reason : ''));
    setClass(parts.reason, bot.ready ? 'reason' : 'reason warn');
    parts.noChats.hidden = bot.chats.length > 0;
    parts.noPlugins.hidden = bot.plugins.length > 0;
    reconcile(parts.chats, bot.chats, function (chat) { return chat.id; },
      function () { return row(CHAT_HEADINGS.length, CHAT_NUMERIC, [8]); },
      function (tr, chat) { updateChat(tr, chat, now); });
    reconcile(parts.plugins, bot.plugins, function (plugin) { return plugin.instance; },
      function () { return row(PLUGIN_HEADINGS.length, PLUGIN_NUMERIC, [5, 6]); }, updatePlugin);
    var relaySides = relaySidesOf(bot);
    parts.relayHeading.hidden = parts.relayTable.hidden = relaySides.length === 0;
    reconcile(parts.relaySides, relaySides, function (item) { return item.instance + ' ' + item.side.side; },
      function () { return row(RELAY_SIDE_HEADINGS.length, RELAY_SIDE_NUMERIC, []); },
      function (tr, item) { updateRelaySide(tr, item, now); });
  }
  function updateChat(tr, chat, now) {
    var c = tr.cells;
    setData(tr, 'chat', chat.subject);
    setData(tr, 'state', chat.state);
    setText(c[0], chat.subject, 'chat id ' + chat.id);
    setText(c[1], chat.group);
    pill(c[2], chat.state.replace(/_/g, ' '), STATE_CLASS[chat.state] || 'idle');
    setText(c[3], ago(chat.since, now), full(chat.since));
    setText(c[4], chat.lag, 'cursor ' + (chat.cursor === null ? 'none' : chat.cursor) + ', newest ' + chat.newest);
    setText(c[5], chat.lastMessageAt ? ago(chat.lastMessageAt, now) : 'none yet', full(chat.lastMessageAt) + (chat.lastMessageAt ? ' · ' : '') + chat.handled + ' handled');
    setText(c[6], chat.outbox);
    setText(c[7], chat.reconnects, 'opened ' + chat.opened + ' times, ' + chat.upgradesRefused + ' upgrades refused');
    var trouble = chat.lastTrouble ? chat.lastTrouble.what + ' (' + ago(chat.lastTrouble.at, now) + ')' : '';
    var text = !chat.ready && chat.reason && (!chat.lastTrouble || chat.reason !== chat.lastTrouble.what) ? chat.reason + (trouble ? '; ' + trouble : '') : trouble;
    setText(c[8], text, chat.lastTrouble ? full(chat.lastTrouble.at) : '');
    setClass(c[8], chat.ready ? 'wrap muted' : 'wrap');
  }
  // A relay's own words for its connection (relay-irc: connected/connecting/stopped; relay-slack: also failed).
  function connectionClass(state) {
    if (/^(connected|open|ready|joined)$/.test(state)) return 'ok';
    if (/^(connecting|reconnecting|starting)$/.test(state)) return 'warn';
    if (/^(stopped|idle|closed)$/.test(state)) return 'idle';
    return 'bad';
  }
  function updatePlugin(tr, plugin) {
    var c = tr.cells;
    setData(tr, 'plugin', plugin.instance);
    setText(c[0], plugin.instance);
    setText(c[1], plugin.plugin);
    // A relay's lines do not pass its handle(): its lines in and out are what it handled (per side below).
    var sum = function (key) { return plugin.sides.reduce(function (total, side) { return total + side[key]; }, 0); };
    setText(c[2], plugin.sides ? 'in ' + sum('linesIn') + ' · out ' + sum('linesOut') : plugin.handled,
      plugin.sides ? plugin.handled + ' messages of the chat passed its handle()' : '');
    setText(c[3], plugin.errors);
    setText(c[4], plugin.timeouts);
    if (plugin.connection) {
      var state = plugin.connection.state;
      var span = c[5].firstChild || c[5].appendChild(el('span'));
      setClass(span, 'pill ' + connectionClass(state));
      setText(span, state);
      var detail = span.nextSibling || c[5].appendChild(el('span', 'muted'));
      setText(detail, plugin.connection.detail ? ' ' + plugin.connection.detail : '');
    } else if (c[5].textContent !== '') c[5].replaceChildren();
    var queues = plugin.queues ? Object.keys(plugin.queues).map(function (name) { return name + ' ' + plugin.queues[name]; }) : [];
    setText(c[6], queues.join(', '));
  }

  function showReload(reload, now) {
    var signature = JSON.stringify(reload || null) + ago(reload && reload.at, now);
    if (signature === shownReload) return;
    shownReload = signature;
    var box = $('reload');
    if (!reload) { box.replaceChildren(el('p', 'empty', 'No reload since the start.')); return; }
    var head = el('p');
    head.appendChild(el('span', 'pill ' + (reload.applied ? 'ok' : 'bad'), reload.applied ? 'applied' : 'refused'));
    head.appendChild(el('span', '', ' ' + full(reload.at) + ' (' + ago(reload.at, now) + ')'));
    var parts = [head];
    [['Changes', reload.changes], ['Problems', reload.problems]].forEach(function (pair) {
      if (!pair[1] || pair[1].length === 0) return;
      parts.push(el('h3', '', pair[0]));
      var list = el('ul', 'plain');
      pair[1].forEach(function (line) { list.appendChild(el('li', 'wrap', line)); });
      parts.push(list);
    });
    box.replaceChildren.apply(box, parts);
  }

  function showErrors(errors) {
    var shown = errors.slice(0, 20);
    var signature = JSON.stringify(shown);
    if (signature === shownErrors) return;
    shownErrors = signature;
    var box = $('errors');
    if (shown.length === 0) { box.replaceChildren(el('p', 'empty', 'None since the start.')); return; }
    var t = table(['Time', 'Level', 'Where', 'Message', 'Detail'], []);
    shown.forEach(function (entry) {
      var tr = row(5, [], [3, 4]);
      setText(tr.cells[0], clock(entry.at), full(entry.at));
      pill(tr.cells[1], entry.level, entry.level === 'warn' ? 'warn' : 'bad');
      setText(tr.cells[2], [entry.bot, entry.chat, entry.plugin].filter(Boolean).join(' · '));
      setText(tr.cells[3], entry.msg);
      setText(tr.cells[4], entry.detail || '');
      t.body.appendChild(tr);
    });
    box.replaceChildren(t.wrap);
  }

  /** Every side's backlog (a chat's outbox, a relay's channel); a side falling behind shows its warning under the table. */
  function showBacklogs(backlogs) {
    var signature = JSON.stringify(backlogs);
    if (signature === shownBacklogs) return;
    shownBacklogs = signature;
    var box = $('backlogs');
    if (backlogs.length === 0) { box.replaceChildren(el('p', 'empty', 'No sides yet.')); return; }
    var numeric = [2, 3, 4, 5];
    var t = table(['Bot', 'Side', 'Waiting', 'Oldest', 'Arriving /s', 'Taken /s', 'Paced by', 'State'], numeric);
    var warnings = el('ul');
    backlogs.forEach(function (side) {
      var tr = row(8, numeric, [6]);
      setText(tr.cells[0], side.bot);
      setText(tr.cells[1], side.side);
      setText(tr.cells[2], side.lines);
      setText(tr.cells[3], side.lines > 0 ? duration(side.oldestSeconds) : '');
      setText(tr.cells[4], side.arrivingPerSecond === null ? '–' : side.arrivingPerSecond);
      setText(tr.cells[5], side.takenPerSecond === null ? '–' : side.takenPerSecond);
      setText(tr.cells[6], side.limit || '');
      pill(tr.cells[7], side.behind ? 'falling behind' : 'keeping up', side.behind ? 'warn' : 'ok');
      t.body.appendChild(tr);
      if (side.warning) warnings.appendChild(el('li', 'wrap', side.bot + ': ' + side.warning));
    });
    box.replaceChildren.apply(box, warnings.children.length > 0 ? [t.wrap, warnings] : [t.wrap]);
  }

${STATUS_PAGE_GATEWAYS_SCRIPT}
  function show(snapshot) {
    var ready = $('ready');
    setData(ready, 'ready', String(snapshot.ready));
    setClass(ready, 'pill ' + (snapshot.ready ? 'ok' : 'bad'));
    setText(ready, snapshot.ready ? 'ready' : 'not ready');
    document.title = 'groupwire ' + (snapshot.ready ? 'ready' : 'NOT ready');
    setText($('version'), snapshot.version);
    setText($('uptime'), duration(snapshot.uptimeSeconds), 'started ' + full(snapshot.startedAt));
    setText($('pid'), snapshot.pid);
    setText($('memory'), megabytes(snapshot.process.rssBytes), 'heap used ' + megabytes(snapshot.process.heapUsedBytes));
    setText($('loop'), snapshot.process.eventLoopLagMs + ' ms');
    setText($('updated'), clock(snapshot.now), full(snapshot.now));
    $('no-bots').hidden = snapshot.bots.length > 0;
    reconcile($('bots'), snapshot.bots, function (bot) { return bot.name; }, createBot,
      function (section, bot) { updateBot(section, bot, snapshot.now); });
    showGateways(snapshot.gateways || [], snapshot.now);
    showBacklogs(snapshot.backlogs || []);
    showReload(snapshot.lastReload, snapshot.now);
    showErrors(snapshot.errors);
    lastSnapshotAt = snapshot.now;
  }

  function setLive(live, why) {
    setData(document.body, 'live', String(live));
    if (!live) setText($('banner'), why + (lastSnapshotAt ? ' What you see is from ' + clock(lastSnapshotAt) + '.' : ''));
  }

  var source;
  function connect() {
    source = new EventSource(eventsUrl);
    source.addEventListener('status', function (event) {
      lastEventAt = Date.now();
      setLive(true);
      lastSnapshot = JSON.parse(event.data);
      show(lastSnapshot);
    });
    // Nothing but the clock and the process figures changed: the ages and the header move on.
    source.addEventListener('tick', function (event) {
      lastEventAt = Date.now();
      setLive(true);
      if (!lastSnapshot) return;
      var tick = JSON.parse(event.data);
      lastSnapshot.now = tick.now;
      lastSnapshot.uptimeSeconds = tick.uptimeSeconds;
      lastSnapshot.process = tick.process;
      show(lastSnapshot);
    });
    source.onerror = function () {
      setLive(false, 'Connection to groupwire lost; retrying…');
      // A refused or failed answer (not a dropped connection) ends the EventSource: start another.
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
    };
  }
  // Connected but silent (a proxy holding the stream back): say so rather than show old numbers as new.
  setInterval(function () {
    if (lastEventAt && Date.now() - lastEventAt > 5000 && document.body.dataset.live === 'true') {
      setLive(false, 'No update for ' + Math.round((Date.now() - lastEventAt) / 1000) + ' s; waiting…');
    }
  }, 1000);
  connect();
})();
`;
