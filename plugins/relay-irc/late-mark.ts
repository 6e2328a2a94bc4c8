/**
 * A line caught up after the relay was away shows when it was said on IRC, before the speaker: the chat
 * posts it now, among later messages. `[14:03 UTC] <alice> hi` for a line of today (UTC), else with
 * the date: `[2026-11-26 14:03 UTC] <alice> hi`. Each line of the text gets it (the relay's lines are one line each).
 */
export function lateChatText(chatText: string, saidAt: number, now = Date.now()): string {
  const said = new Date(saidAt).toISOString();
  const today = said.slice(0, 10) === new Date(now).toISOString().slice(0, 10);
  const mark = `[${today ? '' : `${said.slice(0, 10)} `}${said.slice(11, 16)} UTC] `;
  return chatText.split('\n').map((line) => mark + line).join('\n');
}
