import type { BenchResult } from './report.js';

/**
 * An SVG bar chart of every figure's ratio to its baseline (1 = as good as the baseline's path), one
 * bar per figure, coloured by whether the figure is within the limit. Hand-made: a few dozen
 * lines of SVG need no charting library.
 */
const WIDTH = 860;
const LABEL_WIDTH = 300;
const BAR_HEIGHT = 22;
const GAP = 10;
const TOP = 48;
/** The axis ends here: a ratio of 100 (the gateway's chat → Slack hop) would squeeze every other bar to a sliver. Longer bars are cut and marked. */
const AXIS_CAP = 4;

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function ratioChart(results: BenchResult[]): string {
  const figures = results.flatMap((result) => result.figures);
  const maxRatio = Math.min(AXIS_CAP, Math.max(1.2, ...figures.map((f) => (Number.isFinite(f.ratio) ? f.ratio : 0)))) * 1.1;
  const plotWidth = WIDTH - LABEL_WIDTH - 40;
  const x = (ratio: number) => LABEL_WIDTH + (Math.min(ratio, maxRatio) / maxRatio) * plotWidth;
  const height = TOP + figures.length * (BAR_HEIGHT + GAP) + 40;
  const bars = figures.map((figure, i) => {
    const y = TOP + i * (BAR_HEIGHT + GAP);
    const colour = figure.limit === undefined ? '#4a7ab5' : figure.limit.ok ? '#3c8d50' : '#c0392b';
    const ratio = Number.isFinite(figure.ratio) ? figure.ratio : 0;
    return [
      `<text x="${LABEL_WIDTH - 8}" y="${y + BAR_HEIGHT * 0.7}" text-anchor="end">${escape(figure.label)}</text>`,
      `<rect x="${LABEL_WIDTH}" y="${y}" width="${Math.max(1, x(ratio) - LABEL_WIDTH).toFixed(1)}" height="${BAR_HEIGHT}" fill="${colour}"/>`,
      ratio > maxRatio // a cut bar reaches the edge: its figure goes inside it
        ? `<text x="${(x(ratio) - 6).toFixed(1)}" y="${y + BAR_HEIGHT * 0.7}" text-anchor="end" fill="#fff">» ${ratio.toFixed(2)}×</text>`
        : `<text x="${(x(ratio) + 6).toFixed(1)}" y="${y + BAR_HEIGHT * 0.7}">${ratio.toFixed(2)}×</text>`,
    ].join('');
  });
  const one = x(1).toFixed(1);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#fff"/>
<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">groupwire against its baselines (ratio; 1 = the baseline's figure)</text>
<text x="${WIDTH / 2}" y="38" text-anchor="middle" fill="#555">throughput: higher is better; times, latencies and memory: lower is better. Green: within the issue's limit; red: past it</text>
${bars.join('\n')}
<line x1="${one}" y1="${TOP - 6}" x2="${one}" y2="${height - 30}" stroke="#333" stroke-dasharray="4 3"/>
<text x="${one}" y="${height - 14}" text-anchor="middle" fill="#333">1× (baseline)</text>
</svg>
`;
}
