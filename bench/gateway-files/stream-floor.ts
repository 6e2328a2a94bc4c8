import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';

/**
 * The files bench's memory floor, a process of its own (bench/gateway-files.ts measures its RSS as it
 * measures the bot's): what a plain Node process's RSS grows by when it moves a file the way the
 * gateway does, streamed, with nothing else: the file downloaded with undici into a file on disk, then
 * read from disk three times at once, each read streamed as the body of an undici POST to the fake
 * homeserver's media upload. For each `<url> <token> <homeserver> <matrix token> <name>` line on stdin
 * it moves one file and prints `done`; it prints `ready` when it has started.
 */

const dir = mkdtempSync(join(tmpdir(), 'groupwire-stream-floor-'));
const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const line of lines) {
  const [url, token, homeserver, matrixToken, name] = line.split(' ') as [string, string, string, string, string];
  const path = join(dir, name);
  const got = await request(url, { headers: { authorization: `Bearer ${token}` } });
  if (got.statusCode !== 200) throw new Error(`stream floor: the download answered ${got.statusCode}`);
  await pipeline(got.body, createWriteStream(path));
  const size = statSync(path).size;
  await Promise.all([0, 1, 2].map(async (n) => {
    const answer = await request(`${homeserver}/_matrix/media/v3/upload?filename=${encodeURIComponent(`${n}-${name}`)}`, {
      method: 'POST', body: createReadStream(path), headers: { authorization: `Bearer ${matrixToken}`, 'content-type': 'image/png', 'content-length': String(size) },
    });
    await answer.body.text();
    if (answer.statusCode !== 200) throw new Error(`stream floor: the upload answered ${answer.statusCode}`);
  }));
  rmSync(path);
  process.stdout.write('done\n');
}
rmSync(dir, { recursive: true, force: true });
