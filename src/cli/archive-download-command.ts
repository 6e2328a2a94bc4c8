import { createWriteStream } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type yauzl from 'yauzl';
import { prepareArchiveDestination, reasonOf } from '../api/archive-destination.js';
import { ArchiveIncompleteError } from '../api/archive-download.js';
import { formatStartTime, GroupsError, type DownloadArchivesParams } from '../api/index.js';
import { loadYauzl } from '../api/zip-library.js';
import { CLIENT_HELP, CLIENT_OPTIONS, clientFromFlags } from './client-options.js';
import { parseFlags, requireGroup } from './command.js';
import { EXIT, writeOut } from './output.js';
import { createProgress, formatBytes } from './progress.js';
import { UsageError } from './usage-error.js';

export const ARCHIVE_DOWNLOAD_HELP = `Usage: groupwire archive download --group NAME [--since-msg N | --since TIME] [--out FILE]

Downloads the group's archive (a zip, streamed to a temporary file beside FILE) and writes the
messages.mbox it holds to FILE (default NAME.mbox in the current directory), as the service made it
(mboxrd quoting). The service allows one download per person and group every 24 hours; when refused,
this says when the next one is allowed (exit 1). Where the files go is checked before the download is
asked for, so a mistaken --out never spends the day's download; if writing fails half-way, what was
received is kept and the message says where. A progress line shows on stderr when it is a terminal.

Options:
  --group NAME             the group (required)
  --since-msg N            only messages after message number N
  --since TIME             only messages after TIME: an ISO date-time (2024-05-01T10:00:00Z,
                           2024-05-01T12:00+02:00; without an offset it is local time) or a date
  --out FILE               where the mbox goes (default NAME.mbox); a folder gets NAME.mbox inside
  --keep-zip FILE          also keep the downloaded zip as FILE (a folder gets NAME.zip inside)
  -h, --help               this text

${CLIENT_HELP}`;

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** `--since`: an ISO date-time (or date) as the `YYYY-MM-DDThh:mm:ssZ` the service takes. */
export function parseSince(text: string): string {
  const match = ISO.exec(text.trim());
  const [, y, mo, d, h = '00', mi = '00', s = '00', offset] = match ?? [];
  const daysInMonth = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate();
  if (!match || Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > daysInMonth || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) {
    throw new UsageError(`--since must be an ISO date-time such as 2024-05-01T10:00:00Z, got ${text}`);
  }
  const zone = offset === undefined ? '' : offset.toUpperCase() === 'Z' ? 'Z' : offset.replace(/^([+-]\d{2}):?(\d{2})$/, '$1:$2');
  const ms = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}${zone}`);
  if (Number.isNaN(ms)) throw new UsageError(`--since: not a time: ${text}`);
  return formatStartTime(new Date(ms));
}

function parseSinceMsg(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) throw new UsageError(`--since-msg must be a message number (0 or more), got ${text}`);
  return Number(text);
}

export async function archiveDownloadCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      group: { type: 'string' }, 'since-msg': { type: 'string' }, since: { type: 'string' }, out: { type: 'string' },
      'keep-zip': { type: 'string' }, help: { type: 'boolean', short: 'h' }, ...CLIENT_OPTIONS,
    },
  });
  if (values.help) {
    writeOut(ARCHIVE_DOWNLOAD_HELP);
    return EXIT.ok;
  }
  const group = requireGroup(values.group);
  if (values['since-msg'] !== undefined && values.since !== undefined) throw new UsageError('give --since-msg or --since, not both');
  const params: DownloadArchivesParams = {
    group_name: group,
    start_msg_num: parseSinceMsg(values['since-msg']),
    start_time: values.since === undefined ? undefined : parseSince(values.since),
  };
  const name = group.replace(/[/\\]/g, '_');
  // Before anything is asked of the service: the day's one download must not go to a place that cannot
  // take it, nor be made without yauzl (an optional package) to read it.
  await loadYauzl();
  const out = await prepareArchiveDestination(values.out ?? `${name}.mbox`, `${name}.mbox`);
  const keptZip = values['keep-zip'] === undefined ? undefined : await prepareArchiveDestination(values['keep-zip'], `${name}.zip`);
  const client = clientFromFlags(values);
  // The zip goes beside the mbox (the folder checked above, the same file system) unless it is kept.
  const work = keptZip ? undefined : await mkdtemp(join(dirname(out), '.groupwire-download-'));
  const zipFile = keptZip ?? join(work!, `${name}.zip`);
  const progress = createProgress(`downloading ${group}`);
  // Once the service answered with the file, the downloaded bytes are worth keeping whatever fails next.
  let keepWork = false;
  try {
    const download = await client.downloadArchives(params, { out: zipFile, onProgress: (bytes, total) => progress.update(bytes, total) })
      .catch((error: unknown) => {
        keepWork = error instanceof ArchiveIncompleteError;
        throw error instanceof GroupsError ? error.withContext({ params: { ...params } }) : error;
      });
    progress.done();
    keepWork = true;
    const { bytes, messages } = await extractMbox(zipFile, out).catch((error: unknown) => {
      throw new Error(`writing ${out} failed: ${reasonOf(error)}; the downloaded archive is kept whole in ${zipFile} ` +
        `(its messages.mbox is the mbox: unzip -p ${zipFile} messages.mbox)`, { cause: error });
    });
    keepWork = keptZip !== undefined;
    const kept = keptZip ? `; the zip (${formatBytes(download.bytes)}) is ${zipFile}` : '';
    writeOut(`wrote ${out}: ${messages} message${messages === 1 ? '' : 's'}, ${formatBytes(bytes)}${kept}\n`);
    return EXIT.ok;
  } finally {
    progress.done();
    await client.close();
    if (work && !keepWork) await rm(work, { recursive: true, force: true });
  }
}

/**
 * Streams `messages.mbox` out of the zip into `out` (through `out.part`, renamed when complete), the
 * bytes as they are, counting the messages (lines starting `From `) on the way.
 */
export async function extractMbox(zipFile: string, out: string): Promise<{ bytes: number; messages: number }> {
  const { zip, stream } = await openEntry(zipFile, 'messages.mbox');
  const counter = new MboxCounter();
  const partial = `${out}.part`;
  try {
    await pipeline(stream, counter, createWriteStream(partial));
    await rename(partial, out);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  } finally {
    zip.close();
  }
  return { bytes: counter.bytes, messages: counter.messages };
}

/** Counts bytes and `From ` lines of an mbox stream passing through, across chunk boundaries. */
export class MboxCounter extends Transform {
  bytes = 0;
  messages = 0;
  // The end of what came before: a message line split between chunks is found in tail + chunk.
  private tail = Buffer.from('\n');
  private static readonly MARK = Buffer.from('\nFrom ');

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null, data?: Buffer) => void): void {
    this.bytes += chunk.length;
    const buffer = Buffer.concat([this.tail, chunk]);
    for (let at = buffer.indexOf(MboxCounter.MARK); at !== -1; at = buffer.indexOf(MboxCounter.MARK, at + 1)) this.messages += 1;
    // Shorter than the mark, so no match is ever counted twice.
    this.tail = buffer.subarray(Math.max(0, buffer.length - (MboxCounter.MARK.length - 1)));
    done(null, chunk);
  }
}

async function openEntry(zipFile: string, name: string): Promise<{ zip: yauzl.ZipFile; stream: Readable }> {
  const unzip = await loadYauzl();
  return new Promise((resolve, reject) => {
    unzip.open(zipFile, { lazyEntries: true, autoClose: false }, (error, zip) => {
      if (error || !zip) return reject(error ?? new Error(`cannot open ${zipFile}`));
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== name) return zip.readEntry();
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) {
            zip.close();
            reject(streamError ?? new Error(`cannot read ${name} in ${zipFile}`));
          } else resolve({ zip, stream });
        });
      });
      zip.on('end', () => {
        zip.close();
        reject(new Error(`the downloaded archive holds no ${name}`));
      });
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}
