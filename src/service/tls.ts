import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { mkdirPrivate, writeFilePrivate } from '../store/private-files.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import selfsigned from 'selfsigned';

export interface TlsMaterial {
  key: string;
  cert: string;
  /** The CA that signed `cert`, for clients to trust (written to `caFile`). */
  ca: string;
  caFile: string;
}

const YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * A private CA and a localhost certificate it signs, kept in `dir` so a sandbox's clients can keep
 * trusting the same CA file across restarts. Existing files are reused. The CA's own key is never
 * written: the kept certificate is all the service needs.
 */
export async function localTls(dir: string): Promise<TlsMaterial> {
  const caFile = join(dir, 'ca.pem');
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  try {
    const [ca, cert, key] = await Promise.all([readFile(caFile, 'utf8'), readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
    return { ca, cert, key, caFile };
  } catch {
    // Not there yet (or incomplete): make a new set below.
  }
  const made = await generateTls();
  await mkdirPrivate(dir);
  await writeFilePrivate(caFile, made.ca);
  await writeFilePrivate(certFile, made.cert);
  await writeFilePrivate(keyFile, made.key);
  return { ...made, caFile };
}

/**
 * A CA and certificate for this process only: just the CA certificate goes to disk (clients need a
 * file to trust), in a temporary folder that removeTlsDir (or the process's exit) removes; the
 * private key stays in memory.
 */
export async function temporaryLocalTls(): Promise<TlsMaterial & { dir: string }> {
  const dir = temporaryTlsDir();
  const made = await generateTls();
  await mkdirPrivate(dir);
  const caFile = join(dir, 'ca.pem');
  await writeFilePrivate(caFile, made.ca);
  return { ...made, caFile, dir };
}

async function generateTls(): Promise<Omit<TlsMaterial, 'caFile'>> {
  const notBeforeDate = new Date(Date.now() - 3600_000);
  const notAfterDate = new Date(Date.now() + 5 * YEAR_MS);
  const ca = await selfsigned.generate([{ name: 'commonName', value: 'groupwire local service CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const leaf = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }],
      },
    ],
  });
  return { ca: ca.cert, cert: leaf.cert, key: leaf.private };
}

/** Temporary key directories of services not closed yet (see temporaryTlsDir). */
const temporaryDirs = new Set<string>();

/**
 * A new temporary directory name for TLS files that must not outlive the process: removeTlsDir
 * removes it, and if the process exits first (a second Ctrl-C, process.exit) an exit hook does.
 */
function temporaryTlsDir(): string {
  if (temporaryDirs.size === 0) process.once('exit', removeLeftTlsDirs);
  const dir = join(tmpdir(), `groupwire-${process.pid}-${randomBytes(4).toString('hex')}`);
  temporaryDirs.add(dir);
  return dir;
}

export async function removeTlsDir(dir: string): Promise<void> {
  // Forgotten only once it is gone: an exit while rm runs (a second Ctrl-C) must still remove it.
  await rm(dir, { recursive: true, force: true });
  temporaryDirs.delete(dir);
  if (temporaryDirs.size === 0) process.removeListener('exit', removeLeftTlsDirs);
}

function removeLeftTlsDirs(): void {
  for (const dir of temporaryDirs) rmSync(dir, { recursive: true, force: true });
  temporaryDirs.clear();
}
