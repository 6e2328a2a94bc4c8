/**
 * A message waiting to be appended to one file, already rendered: the message object itself dies young
 * (entries wait up to a flush interval, long enough to be promoted and cost full collections).
 */
export interface PendingEntry {
  msgNum: number;
  text: string;
}

/**
 * The entries to append after msg_num `after`, in msg_num order, each once: the list itself when it is
 * already so (the usual case, no copy), else a sorted copy without what is at or below `after`.
 */
export function inOrderAfter(pending: PendingEntry[], after: number): PendingEntry[] {
  let previous = after;
  let ordered = true;
  for (const entry of pending) {
    if (entry.msgNum <= previous) {
      ordered = false;
      break;
    }
    previous = entry.msgNum;
  }
  if (ordered) return pending;
  const fresh = pending.filter((entry) => entry.msgNum > after).sort((a, b) => a.msgNum - b.msgNum);
  const entries: PendingEntry[] = [];
  for (const entry of fresh) if (entry.msgNum > (entries.at(-1)?.msgNum ?? after)) entries.push(entry);
  return entries;
}
