import { existsSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { requireTool } from './helpers/require-tool.js';

/** A test whose server or checker is missing fails with one line naming the package to install. */
describe('requireTool', () => {
  test('a program that is not there: one line naming the Debian package', () => {
    expect(() => requireTool('groupwire-no-such-tool', 'prometheus')).toThrow(/^groupwire-no-such-tool not found: apt-get install prometheus$/);
    expect(() => requireTool('/usr/sbin/groupwire-no-such-server', 'ngircd')).toThrow(/^\/usr\/sbin\/groupwire-no-such-server not found: apt-get install ngircd$/);
  });

  test('a program that is there: its path, from PATH or as given', () => {
    const node = requireTool('node', 'nodejs');
    expect(existsSync(node)).toBe(true);
    expect(requireTool(process.execPath, 'nodejs')).toBe(process.execPath);
  });
});
