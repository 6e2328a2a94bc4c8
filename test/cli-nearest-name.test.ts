import { describe, expect, it } from 'vitest';
import { editDistance, nearestName } from '../src/config/nearest-name.js';

describe('nearestName', () => {
  it.each([
    ['groupname', ['group_id', 'group_name', 'limit'], 'group_name'],
    ['relay-ircc', ['logger', 'relay-irc', 'relay-slack', 'responder'], 'relay-irc'],
    ['chanels', ['bots', 'chats', 'service'], 'chats'],
    ['Group_Name', ['group_name'], 'group_name'],
    ['lmiit', ['limit', 'q'], 'limit'],
    ['name', ['group_id', 'group_name'], 'group_name'],
    ['x', ['group_name', 'limit'], undefined],
    ['completely-different', ['group_name', 'limit'], undefined],
    ['anything', [], undefined],
  ])('%s among %j → %s', (input, candidates, expected) => {
    expect(nearestName(input, candidates)).toBe(expected);
  });

  it('prefers a close typo to a containing name, and the earlier candidate on a tie', () => {
    expect(nearestName('chat', ['chat_ids', 'chats'])).toBe('chats');
    expect(nearestName('ab', ['ac', 'ad'])).toBe('ac');
  });

  it('counts a swap of neighbours as one edit', () => {
    expect(editDistance('limit', 'lmiit')).toBe(1);
    expect(editDistance('ab', 'ba')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});
