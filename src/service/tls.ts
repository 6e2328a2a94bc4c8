import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { mkdirPrivate, writeFilePrivate } from '../store/private-files.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCertificate } from './x509.js';

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

/**
 * A new CA (EC P-256, its key dropped once it has signed) and a localhost certificate it signs, both
 * valid from an hour ago (clocks a little behind) for five years. Made by x509.ts with node:crypto:
 * the selfsigned package brought 22 packages into every install for these two certificates (#37).
 */
async function generateTls(): Promise<Omit<TlsMaterial, 'caFile'>> {
  const notBefore = new Date(Date.now() - 3600_000);
  const notAfter = new Date(Date.now() + 5 * YEAR_MS);
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const caName = 'groupwire local service CA';
  const ca = createCertificate({
    commonName: caName,
    publicKey: caKeys.publicKey,
    signedBy: { commonName: caName, ...caKeys },
    notBefore,
    notAfter,
    isCA: true,
    keyUsage: ['digitalSignature', 'keyCertSign', 'cRLSign'],
  });
  const leafKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const cert = createCertificate({
    commonName: 'localhost',
    publicKey: leafKeys.publicKey,
    signedBy: { commonName: caName, ...caKeys },
    notBefore,
    notAfter,
    isCA: false,
    // RFC 5480 §3: an EC end entity's keyUsage is never keyEncipherment (the old certificate's had it).
    keyUsage: ['digitalSignature'],
    extendedKeyUsage: ['serverAuth'],
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
  });
  return { ca, cert, key: leafKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
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
