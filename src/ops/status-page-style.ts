/**
 * The status page's stylesheet (inlined: the page loads nothing else). Calm on purpose: system fonts,
 * quiet tables, colour only where it says something (a chat's state, ready or not, a lost connection).
 */
export const STATUS_PAGE_STYLE = `
:root {
  color-scheme: light dark;
  --bg: #f7f7f5; --fg: #222; --muted: #6b6b6b; --line: #deded9; --card: #fff;
  --ok: #1f7a3a; --ok-bg: #e3f3e7; --warn: #8a5a00; --warn-bg: #fbf0d9; --bad: #a12a2a; --bad-bg: #f9e1e1;
  --idle: #4a5a70; --idle-bg: #e6ebf2;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #17181a; --fg: #e4e4e2; --muted: #9a9a98; --line: #33353a; --card: #1f2023;
    --ok: #7fd49a; --ok-bg: #1d3325; --warn: #e8c07a; --warn-bg: #3a2f1a; --bad: #f09a9a; --bad-bg: #3d2222;
    --idle: #a9b8cc; --idle-bg: #262d37;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { position: sticky; top: 0; z-index: 1; background: var(--card); border-bottom: 1px solid var(--line); padding: 10px 20px;
  display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px 18px; }
header h1 { font-size: 17px; margin: 0 6px 0 0; }
header .fact { color: var(--muted); }
header .fact b { color: var(--fg); font-weight: 600; }
main { padding: 12px 20px 40px; max-width: 1400px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px 12px; margin: 14px 0; }
h2 { font-size: 15px; margin: 2px 0 6px; }
h3 { font-size: 13px; margin: 12px 0 4px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
.reason { color: var(--muted); margin: 0 0 4px; }
.table-scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 4px 10px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 500; font-size: 12px; white-space: nowrap; }
td.num, th.num { text-align: right; }
td.wrap { max-width: 420px; overflow-wrap: anywhere; }
tr:last-child td { border-bottom: none; }
.muted { color: var(--muted); }
.empty { color: var(--muted); font-style: italic; margin: 4px 0; }
.pill { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600; white-space: nowrap; }
.ok { color: var(--ok); background: var(--ok-bg); }
.warn { color: var(--warn); background: var(--warn-bg); }
.bad { color: var(--bad); background: var(--bad-bg); }
.idle { color: var(--idle); background: var(--idle-bg); }
#live { margin-left: auto; }
#banner { display: none; background: var(--warn-bg); color: var(--warn); padding: 6px 20px; border-bottom: 1px solid var(--line); }
body[data-live="false"] #banner { display: block; }
body[data-live="false"] main { opacity: .6; }
ul.plain { margin: 2px 0; padding-left: 18px; }
.gateway + .gateway { border-top: 1px solid var(--line); margin-top: 10px; }
.charts { display: flex; flex-wrap: wrap; gap: 8px 20px; margin-top: 8px; }
svg.chart { background: var(--bg); border: 1px solid var(--line); border-radius: 4px; max-width: 100%; height: auto; }
svg.chart .axis { stroke: var(--line); }
svg.chart .tick { fill: var(--muted); font-size: 10px; }
.legend { margin: 4px 0 0; color: var(--muted); font-size: 12px; }
.legend .key { border-left: 10px solid; padding-left: 5px; margin-right: 14px; }
`;
