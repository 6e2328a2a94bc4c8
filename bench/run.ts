import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './lib/paths.js';

/**
 * `npm run bench [-- name ...]`: each bench in a fresh node process (so one's sockets and heap do not
 * colour the next one's memory figures), then BENCHMARKS.md and its chart from bench/results/.
 */
const BENCHES = ['throughput', 'footprint', 'many-chats', 'relay-latency', 'irc-pacing', 'gateway-latency', 'gateway-platforms', 'gateway-files', 'mail-announce', 'workers', 'soak', 'overload', 'restart', 'install-size'];

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !BENCHES.includes(name));
if (unknown.length > 0) {
  process.stderr.write(`unknown bench ${unknown.join(', ')}; the benches are ${BENCHES.join(', ')}\n`);
  process.exit(2);
}
let failed = 0;
for (const name of asked.length > 0 ? asked : BENCHES) {
  // The last bench's writes (10,000 chats' state and logs) reach the disk now, not during the next
  // bench, whose relay writes its journals synchronously.
  spawnSync('sync');
  const run = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(ROOT, 'bench', `${name}.ts`)], {
    cwd: ROOT, stdio: 'inherit',
  });
  if (run.status !== 0) {
    failed += 1;
    process.stderr.write(`bench ${name} failed (${run.status ?? run.signal})\n`);
  }
}
const written = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'write-report.ts')], { cwd: ROOT, stdio: 'inherit' });
process.exit(failed > 0 || written.status !== 0 ? 1 : 0);
