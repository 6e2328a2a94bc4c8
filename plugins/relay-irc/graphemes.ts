/**
 * Grapheme clusters (what a reader sees as one character: an emoji with its modifiers, a letter with
 * its accents) in linear time.
 *
 * Why not `Intl.Segmenter` over the whole text: on Node 20 walking its segments costs time proportional
 * to the text's length for EVERY segment, so a 32 KB line takes 0.2 s and 128 KB 16 s (issue #31: a
 * long line on IRC or Slack stalled the bot). Here the segmenter only ever sees a window of WINDOW code
 * units that starts at a cluster boundary; every cluster of the window but its last (which may go on
 * past the window) is taken, and the next window starts where that last one starts. Grapheme rules look
 * no further back than the cluster they are in, so starting at a boundary gives the same clusters as
 * segmenting the whole text. A cluster longer than a window (a letter with thousands of combining marks)
 * comes out cut into window-sized pieces, never inside a surrogate pair.
 *
 * Plain ASCII is taken without the segmenter (it costs about 0.4 s a MiB even in windows): an ASCII
 * character followed by another ASCII character (or by nothing) is a cluster of its own, except CR
 * before LF, since only non-ASCII characters (marks, joiners, selectors, modifiers) extend a cluster.
 */

const WINDOW = 256;

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** True when the character at `at` is ASCII, not CR, and followed by ASCII or the end: a cluster alone. */
function standsAlone(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  if (code >= 0x80 || code === 0x0d) return false;
  return at + 1 === text.length || text.charCodeAt(at + 1) < 0x80;
}

/** The clusters of `text` in order; stops early (and returns what it has) once `limit` are found. */
export function graphemesOf(text: string, limit = Infinity): string[] {
  const clusters: string[] = [];
  let at = 0;
  while (at < text.length && clusters.length < limit) {
    if (standsAlone(text, at)) {
      clusters.push(text[at]!);
      at += 1;
      continue;
    }
    let end = Math.min(text.length, at + WINDOW);
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end += 1;
    const window = text.slice(at, end);
    const found = Array.from(segmenter.segment(window), (s) => s.segment);
    // The window's last cluster may continue past it: taken only at the end of the text, or when it is the only one.
    const take = end === text.length || found.length === 1 ? found.length : found.length - 1;
    for (let i = 0; i < take && clusters.length < limit; i += 1) {
      clusters.push(found[i]!);
      at += found[i]!.length;
    }
  }
  return clusters;
}
