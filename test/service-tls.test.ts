import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { get } from 'node:https';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { localTls, removeTlsDir, temporaryLocalTls, type TlsMaterial } from '../src/service/tls.js';
import { ROOT } from './helpers/cli.js';

/**
 * #37: the local service's private CA and localhost certificate, made with node:crypto alone (no
 * selfsigned and its 22 packages). Read back with node's X509Certificate and used by a real HTTPS
 * server; the extensions node does not expose are found in the certificate's DER.
 */

let dir: string;
let tls: TlsMaterial;
let ca: X509Certificate;
let leaf: X509Certificate;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'groupwire-service-tls-'));
  tls = await localTls(join(dir, 'kept'));
  ca = new X509Certificate(tls.ca);
  leaf = new X509Certificate(tls.cert);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Whether the certificate's DER holds `hex` (an extension's exact encoding). */
const holds = (certificate: X509Certificate, hex: string): boolean => certificate.raw.includes(Buffer.from(hex.replace(/ /g, ''), 'hex'));

describe('the local CA', () => {
  test('is a self-signed CA: basicConstraints cA (critical), keyCertSign and cRLSign (critical)', () => {
    expect(ca.ca).toBe(true);
    expect(ca.subject).toBe('CN=groupwire local service CA');
    expect(ca.issuer).toBe(ca.subject);
    expect(ca.verify(ca.publicKey)).toBe(true);
    // basicConstraints (2.5.29.19), critical, { cA TRUE, pathLenConstraint 0 }.
    expect(holds(ca, '30 12 06 03 55 1d 13 01 01 ff 04 08 30 06 01 01 ff 02 01 00')).toBe(true);
    // keyUsage (2.5.29.15), critical: digitalSignature (bit 0), keyCertSign (5), cRLSign (6) = 1000 011x.
    expect(holds(ca, '30 0e 06 03 55 1d 0f 01 01 ff 04 04 03 02 01 86')).toBe(true);
    // subjectKeyIdentifier (2.5.29.14): 20 octets (SHA-1).
    expect(holds(ca, '30 1d 06 03 55 1d 0e 04 16 04 14')).toBe(true);
  });
});

describe('the localhost certificate', () => {
  test('is signed by the CA, for localhost, 127.0.0.1 and ::1 only, and is not a CA', () => {
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.issuer).toBe(ca.subject);
    expect(leaf.subject).toBe('CN=localhost');
    expect(leaf.ca).toBe(false);
    expect(leaf.checkHost('localhost')).toBe('localhost');
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(leaf.checkIP('::1')).toBe('::1');
    expect(leaf.checkHost('example.com')).toBeUndefined();
    expect(leaf.checkIP('127.0.0.2')).toBeUndefined();
    expect(leaf.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
  });

  test('is for a TLS server (extKeyUsage serverAuth, keyUsage digitalSignature) and names the CA\'s key', () => {
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // node's keyUsage lists the extended key usages
    expect(holds(leaf, '30 0e 06 03 55 1d 0f 01 01 ff 04 04 03 02 07 80')).toBe(true); // digitalSignature only
    // authorityKeyIdentifier (2.5.29.35) { [0] the CA's subjectKeyIdentifier }.
    const caKeyId = ca.raw.subarray(ca.raw.indexOf(Buffer.from('0603551d0e0416', 'hex')) + 9).subarray(0, 20);
    expect(holds(leaf, `30 1f 06 03 55 1d 23 04 18 30 16 80 14 ${caKeyId.toString('hex')}`)).toBe(true);
    expect(leaf.serialNumber).not.toBe(ca.serialNumber);
    expect(leaf.serialNumber).toMatch(/^[0-9A-F]{2,32}$/); // positive (OpenSSL would write a '-'), 16 octets at most
  });

  test('is valid from an hour ago for five years, as the CA is', () => {
    for (const certificate of [ca, leaf]) {
      const from = Date.parse(certificate.validFrom);
      const to = Date.parse(certificate.validTo);
      expect(Date.now() - from).toBeGreaterThan(3_590_000);
      expect(Date.now() - from).toBeLessThan(3_700_000);
      expect((to - from) / (24 * 3_600_000)).toBeCloseTo(5 * 365, 0);
    }
    expect(leaf.validFrom).toBe(ca.validFrom);
    expect(leaf.validTo).toBe(ca.validTo);
  });
});

describe('HTTPS with the certificate', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer({ key: tls.key, cert: tls.cert }, (_request, response) => response.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const fetchText = (host: string, trusted: string | undefined): Promise<string> => new Promise((resolve, reject) => {
    // Always to 127.0.0.1 (where the server listens), checking the certificate for `host`.
    get({ host: '127.0.0.1', servername: host === '127.0.0.1' ? undefined : host, port, path: '/', ca: trusted, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve(body));
    }).on('error', reject);
  });

  test('a client that trusts the CA file is answered, by IP address and by name', async () => {
    expect(await fetchText('127.0.0.1', readFileSync(tls.caFile, 'utf8'))).toBe('hello');
    expect(await fetchText('localhost', tls.ca)).toBe('hello');
  });

  test('a client that trusts only the system\'s CAs is refused', async () => {
    await expect(fetchText('127.0.0.1', undefined)).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
  });
});

describe('the files', () => {
  test('are written private, reused across restarts, and hold no CA key', async () => {
    const kept = join(dir, 'kept');
    expect(readdirSync(kept).sort()).toEqual(['ca.pem', 'cert.pem', 'key.pem']);
    expect(statSync(join(kept, 'key.pem')).mode & 0o777).toBe(0o600);
    expect(tls.key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const again = await localTls(kept);
    expect(again).toEqual(tls);
    expect(readFileSync(join(kept, 'cert.pem'), 'utf8')).toBe(tls.cert);
  });

  test('of a temporary set are just the CA certificate, removed by removeTlsDir', async () => {
    const temporary = await temporaryLocalTls();
    expect(readdirSync(temporary.dir)).toEqual(['ca.pem']);
    expect(new X509Certificate(temporary.cert).verify(new X509Certificate(temporary.ca).publicKey)).toBe(true);
    expect(temporary.ca).not.toBe(tls.ca);
    await removeTlsDir(temporary.dir);
    expect(existsSync(temporary.dir)).toBe(false);
  });

  test('are made by node:crypto alone: the package does not depend on selfsigned', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    for (const field of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
      expect(Object.keys(manifest[field] ?? {})).not.toContain('selfsigned');
    }
    for (const file of ['tls.ts', 'x509.ts', 'der.ts']) {
      const imports = [...readFileSync(join(ROOT, 'src/service', file), 'utf8').matchAll(/(?:from|import\() ?'([^']+)'/g)].map((match) => match[1]);
      expect(imports.filter((from) => !from!.startsWith('node:') && !from!.startsWith('.'))).toEqual([]);
    }
  });
});
