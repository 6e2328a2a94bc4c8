/**
 * The status page's gateways and relay sides (inlined into STATUS_PAGE_SCRIPT's function, whose helpers
 * it uses: el, setText, setClass, setData, table, row, pill, reconcile, duration, ago, full). Each gateway
 * gets a table of its sides and two small charts drawn here as inline SVG (no library, nothing loaded:
 * the page works offline): lines a second per side and queue depth per side, over the history the
 * snapshot carries (the last 15 minutes, sampled by the process, so a page opened late draws them too).
 */
export const STATUS_PAGE_GATEWAYS_SCRIPT = String.raw`
  var SVG = 'http://www.w3.org/2000/svg';
  var SIDE_COLOURS = ['#2f6fb3', '#c0612b', '#2f8f5b', '#8a4fb0', '#b3402f', '#5c6f80', '#a08a1e', '#2a8e9e'];
  var SIDE_HEADINGS = ['Side', 'Bot', 'State', 'In', 'Out', 'Last minute', 'Queue', 'Last line', 'Lag'];
  var SIDE_NUMERIC = [3, 4, 6, 8];
  var RELAY_SIDE_HEADINGS = ['Relay', 'Side', 'State', 'In', 'Out', 'Queue', 'Last line', 'Lag'];
  var RELAY_SIDE_NUMERIC = [3, 4, 5, 7];

  function svg(tag, attributes) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attributes || {}).forEach(function (name) { node.setAttribute(name, String(attributes[name])); });
    return node;
  }
  function sideState(state) { return state === 'running' ? 'ok' : STATE_CLASS[state] || connectionClass(state); }
  function lastLine(side, now) { return side.lastLineAt ? ago(side.lastLineAt, now) : 'none yet'; }

  /** A small line chart: one polyline per side, the newest point at the right edge, the window's full width 15 minutes. */
  function chart(kind, title, gateway, valuesOf) {
    var width = 360, height = 90, top = 14, bottom = 16, left = 4, right = 4;
    var points = Math.max(2, gateway.historyPoints);
    var max = 1;
    gateway.sides.forEach(function (side) { valuesOf(side).forEach(function (v) { if (v > max) max = v; }); });
    var box = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, width: width, height: height, role: 'img', 'class': 'chart' });
    box.dataset.chart = kind;
    box.dataset.max = String(max);
    box.appendChild(svg('title')).textContent = title;
    box.appendChild(svg('line', { x1: left, y1: height - bottom, x2: width - right, y2: height - bottom, 'class': 'axis' }));
    var label = function (x, y, text, anchor) {
      var node = box.appendChild(svg('text', { x: x, y: y, 'text-anchor': anchor, 'class': 'tick' }));
      node.textContent = text;
    };
    label(left, 10, title + ' (max ' + (Math.round(max * 100) / 100) + ')', 'start');
    label(left, height - 3, duration(points * gateway.sampleEverySeconds) + ' ago', 'start');
    label(width - right, height - 3, 'now', 'end');
    var step = (width - left - right) / (points - 1);
    gateway.sides.forEach(function (side, index) {
      var values = valuesOf(side);
      var coordinates = values.map(function (value, i) {
        var x = width - right - (values.length - 1 - i) * step;
        var y = height - bottom - (value / max) * (height - top - bottom);
        return x.toFixed(1) + ',' + y.toFixed(1);
      });
      var line = box.appendChild(svg('polyline', { points: coordinates.join(' '), fill: 'none', stroke: SIDE_COLOURS[index % SIDE_COLOURS.length], 'stroke-width': 1.5 }));
      line.dataset.side = side.side;
      line.dataset.points = String(values.length);
    });
    return box;
  }

  function createGateway() {
    var section = el('div', 'gateway');
    section.parts = { name: section.appendChild(el('h3')) };
    var sides = table(SIDE_HEADINGS, SIDE_NUMERIC);
    section.appendChild(sides.wrap);
    section.parts.sides = sides.body;
    section.parts.charts = section.appendChild(el('div', 'charts'));
    section.parts.legend = section.appendChild(el('p', 'legend'));
    return section;
  }
  function updateGateway(section, gateway, now) {
    setData(section, 'gateway', gateway.name);
    setText(section.parts.name, gateway.name + (gateway.implied ? ' (from the relays\' channels)' : ''));
    reconcile(section.parts.sides, gateway.sides, function (side) { return side.bot + ' ' + side.side; },
      function () { return row(SIDE_HEADINGS.length, SIDE_NUMERIC, []); },
      function (tr, side) { updateSide(tr, side, now); });
    // The charts change only with a new sample: drawn again then, not at every tick.
    var signature = gateway.lastSampleAt + JSON.stringify(gateway.sides.map(function (side) { return side.side; }));
    if (section.parts.charts.dataset.drawn !== signature) {
      section.parts.charts.dataset.drawn = signature;
      section.parts.charts.replaceChildren(
        chart('rate', 'lines a second', gateway, function (side) { return side.history.perSecond; }),
        chart('queue', 'queue depth', gateway, function (side) { return side.history.queue; }));
      var legend = gateway.sides.map(function (side, index) {
        var item = el('span', 'key', side.side);
        item.style.borderColor = SIDE_COLOURS[index % SIDE_COLOURS.length];
        return item;
      });
      section.parts.legend.replaceChildren.apply(section.parts.legend, legend);
    }
  }
  function updateSide(tr, side, now) {
    var c = tr.cells;
    setData(tr, 'side', side.side);
    setData(tr, 'state', side.state);
    setText(c[0], side.side, side.direction === 'inout' ? 'lines go both ways' : 'lines go ' + side.direction + ' only');
    setText(c[1], side.bot);
    pill(c[2], side.state.replace(/_/g, ' '), sideState(side.state));
    setText(c[3], side.linesIn);
    setText(c[4], side.linesOut);
    setText(c[5], side.lastMinute ? side.lastMinute.in + ' in · ' + side.lastMinute.out + ' out' : '–');
    setText(c[6], side.queue);
    setText(c[7], lastLine(side, now), full(side.lastLineAt));
    setText(c[8], duration(side.lagSeconds), 'how long the oldest line waiting for this side has waited');
  }

  function showGateways(gateways, now) {
    $('no-gateways').hidden = gateways.length > 0;
    reconcile($('gateways'), gateways, function (gateway) { return gateway.name; }, createGateway,
      function (section, gateway) { updateGateway(section, gateway, now); });
  }

  /** A relay's channels under its bot's plugins: lines in and out, queue, last line and lag. */
  function relaySidesOf(bot) {
    var sides = [];
    bot.plugins.forEach(function (plugin) {
      (plugin.sides || []).forEach(function (side) { sides.push({ instance: plugin.instance, side: side }); });
    });
    return sides;
  }
  function updateRelaySide(tr, item, now) {
    var c = tr.cells, side = item.side;
    setData(tr, 'relaySide', item.instance + ' ' + side.side);
    setText(c[0], item.instance);
    setText(c[1], side.side);
    pill(c[2], side.state.replace(/_/g, ' '), sideState(side.state));
    setText(c[3], side.linesIn);
    setText(c[4], side.linesOut);
    setText(c[5], side.queue);
    setText(c[6], lastLine(side, now), full(side.lastLineAt));
    setText(c[7], duration(side.lagSeconds), 'how long the oldest line waiting for this side has waited');
  }
`;
