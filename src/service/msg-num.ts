/**
 * Lists kept in msg_num order (a chat's history, a group's archive): the part after a given msg_num,
 * found by binary search.
 */
export function afterMsgNum<T extends { msgNum: number }>(list: readonly T[], after: number): T[] {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (list[mid]!.msgNum <= after) low = mid + 1;
    else high = mid;
  }
  return list.slice(low);
}
