/**
 * A unified diff of two texts, line by line (`diff -u` style, three lines of context), for the report
 * test's failure message. The common head and tail are cut first; the rest is matched by longest
 * common subsequence, or shown as all removed and all added when it is too large to match.
 */
export function unifiedDiff(before: string, after: string, name: string): string {
  // Lines, not the empty piece after a final newline (kept when only one side has that newline).
  const bothEnd = before.endsWith('\n') && after.endsWith('\n');
  const a = (bothEnd ? before.slice(0, -1) : before).split('\n');
  const b = (bothEnd ? after.slice(0, -1) : after).split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head += 1;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail += 1;
  const edits: Array<{ op: ' ' | '-' | '+'; line: string }> = [
    ...a.slice(0, head).map((line) => ({ op: ' ' as const, line })),
    ...middle(a.slice(head, a.length - tail), b.slice(head, b.length - tail)),
    ...a.slice(a.length - tail).map((line) => ({ op: ' ' as const, line })),
  ];
  return [`--- ${name} (checked in)`, `+++ ${name} (generated)`, ...hunks(edits)].join('\n');
}

type Edit = { op: ' ' | '-' | '+'; line: string };

function middle(a: string[], b: string[]): Edit[] {
  if (a.length * b.length > 4_000_000) return [...a.map((line) => ({ op: '-' as const, line })), ...b.map((line) => ({ op: '+' as const, line }))];
  // lengths[i][j]: the longest common subsequence of a[i..] and b[j..].
  const width = b.length + 1;
  const lengths = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      lengths[i * width + j] = a[i] === b[j] ? lengths[(i + 1) * width + j + 1]! + 1 : Math.max(lengths[(i + 1) * width + j]!, lengths[i * width + j + 1]!);
    }
  }
  const edits: Edit[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      edits.push({ op: ' ', line: a[i]! });
      i += 1;
      j += 1;
    } else if (i < a.length && (j === b.length || lengths[(i + 1) * width + j]! >= lengths[i * width + j + 1]!)) {
      // Removals before additions, as diff -u writes them.
      edits.push({ op: '-', line: a[i]! });
      i += 1;
    } else {
      edits.push({ op: '+', line: b[j]! });
      j += 1;
    }
  }
  return edits;
}

/** The edits grouped into hunks with three lines of context, each under its `@@ -l,n +l,n @@` line. */
function hunks(edits: Edit[], context = 3): string[] {
  const out: string[] = [];
  let index = 0;
  while (index < edits.length) {
    while (index < edits.length && edits[index]!.op === ' ') index += 1;
    if (index === edits.length) break;
    const start = Math.max(0, index - context);
    let end = index;
    // A hunk runs on while the next change is within two contexts' worth of unchanged lines.
    for (let quiet = 0; end < edits.length && quiet <= 2 * context; end += 1) quiet = edits[end]!.op === ' ' ? quiet + 1 : 0;
    end = Math.min(edits.length, end);
    while (end > index && edits[end - 1]!.op === ' ') end -= 1;
    end = Math.min(edits.length, end + context);
    const before = edits.slice(0, start);
    const oldStart = before.filter((e) => e.op !== '+').length + 1;
    const newStart = before.filter((e) => e.op !== '-').length + 1;
    const hunk = edits.slice(start, end);
    out.push(`@@ -${oldStart},${hunk.filter((e) => e.op !== '+').length} +${newStart},${hunk.filter((e) => e.op !== '-').length} @@`);
    out.push(...hunk.map((e) => `${e.op}${e.line}`));
    index = end;
  }
  return out;
}
