import { generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto';
import { createServer } from 'node:https';
import { connect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { describe, expect, test } from 'vitest';
import { namedBits, objectIdentifier, octetString, sequence, set, time, unsignedInteger } from '../src/service/der.js';
import { createCertificate, type CertificateSpec } from '../src/service/x509.js';

/** #37: the DER encoder and certificate writer behind the local service's TLS (src/service/der.ts, x509.ts). */

const hex = (buffer: Buffer): string => buffer.toString('hex').replace(/(..)(?!$)/g, '$1 ');
const keys = (): { publicKey: KeyObject; privateKey: KeyObject } => generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const HOUR = 3_600_000;

describe('DER (X.690)', () => {
  test('INTEGERs are minimal and positive', () => {
    expect(hex(unsignedInteger(2))).toBe('02 01 02');
    expect(hex(unsignedInteger(0))).toBe('02 01 00');
    expect(hex(unsignedInteger(0x80))).toBe('02 02 00 80');
    expect(hex(unsignedInteger(Buffer.from([0, 0, 0x7f, 1])))).toBe('02 02 7f 01');
    expect(hex(unsignedInteger(Buffer.from([0, 0xff])))).toBe('02 02 00 ff');
  });

  test('OBJECT IDENTIFIERs: the first two arcs in one octet, large arcs in base 128', () => {
    // RFC 5758 §3.2 ecdsa-with-SHA256 and RFC 5280's id-ce-subjectAltName, as any certificate holds them.
    expect(hex(objectIdentifier('1.2.840.10045.4.3.2'))).toBe('06 08 2a 86 48 ce 3d 04 03 02');
    expect(hex(objectIdentifier('2.5.29.17'))).toBe('06 03 55 1d 11');
    expect(() => objectIdentifier('1')).toThrow(/not an object identifier/);
  });

  test('lengths of 128 octets and more take the long form', () => {
    expect(hex(octetString(Buffer.alloc(127)).subarray(0, 2))).toBe('04 7f');
    expect(hex(octetString(Buffer.alloc(200)).subarray(0, 3))).toBe('04 81 c8');
    expect(hex(sequence(Buffer.alloc(300)).subarray(0, 4))).toBe('30 82 01 2c');
  });

  test('named bits drop trailing zeros; a SET OF is sorted', () => {
    expect(hex(namedBits([0]))).toBe('03 02 07 80'); // digitalSignature
    expect(hex(namedBits([0, 5, 6]))).toBe('03 02 01 86'); // + keyCertSign, cRLSign
    expect(hex(namedBits([8]))).toBe('03 03 07 00 80'); // decipherOnly: a second octet
    expect(hex(set(Buffer.from([2, 1, 9]), Buffer.from([2, 1, 1])))).toBe('31 06 02 01 01 02 01 09');
  });

  test('dates: UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5)', () => {
    expect(time(new Date('2049-12-31T23:59:59.900Z')).toString('latin1')).toBe('\x17\x0d491231235959Z');
    expect(time(new Date('2050-01-01T00:00:00Z')).toString('latin1')).toBe('\x18\x0f20500101000000Z');
    expect(time(new Date('1999-07-04T01:02:03Z')).toString('latin1')).toBe('\x17\x0d990704010203Z');
  });
});

/** A CA and a leaf it signs, with the leaf's spec changed by `leafSpec`. */
function chain(leafSpec: Partial<CertificateSpec> = {}, caSpec: Partial<CertificateSpec> = {}) {
  const caKeys = keys();
  const leafKeys = keys();
  const signedBy = { commonName: 'Test CA', ...caKeys };
  const notBefore = new Date(Date.now() - HOUR);
  const notAfter = new Date(Date.now() + HOUR);
  const ca = createCertificate({ commonName: 'Test CA', publicKey: caKeys.publicKey, signedBy, notBefore, notAfter, isCA: true, keyUsage: ['keyCertSign'], ...caSpec });
  const cert = createCertificate({
    commonName: 'leaf', publicKey: leafKeys.publicKey, signedBy, notBefore, notAfter, isCA: false,
    keyUsage: ['digitalSignature'], extendedKeyUsage: ['serverAuth'], dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], ...leafSpec,
  });
  return { ca, cert, key: leafKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/** A TLS handshake to a server with `cert`, from a client trusting `ca` only: the error code, or 'ok'. */
async function handshake({ ca, cert, key }: { ca: string; cert: string; key: string }): Promise<string> {
  const server = createServer({ cert, key });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, ca, servername: 'localhost' }, () => {
        socket.end();
        resolve('ok');
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('certificates', () => {
  test('dates from 2050 on read back right', () => {
    const own = keys();
    const pem = createCertificate({
      commonName: 'far', publicKey: own.publicKey, signedBy: { commonName: 'far', ...own },
      notBefore: new Date('2049-06-01T00:00:00Z'), notAfter: new Date('2051-02-03T04:05:06Z'), isCA: true, keyUsage: ['keyCertSign'],
    });
    const certificate = new X509Certificate(pem);
    expect(certificate.validFrom).toBe('Jun  1 00:00:00 2049 GMT');
    expect(certificate.validTo).toBe('Feb  3 04:05:06 2051 GMT');
    expect(certificate.verify(own.publicKey)).toBe(true);
    // Self-signed: no authorityKeyIdentifier (RFC 5280 §4.2.1.1 lets it out), only the subjectKeyIdentifier.
    expect(certificate.raw.includes(Buffer.from('0603551d23', 'hex'))).toBe(false);
    expect(certificate.raw.includes(Buffer.from('0603551d0e', 'hex'))).toBe(true);
  });

  test('IPv6 addresses in every written form, and a name that is not printable', () => {
    const { cert } = chain({ commonName: 'grüße', dnsNames: [], ipAddresses: ['::1', 'fe80::1:2', '2001:db8::', '2001:db8:0:0:1:0:0:1', '10.0.0.255'] });
    const certificate = new X509Certificate(cert);
    expect(certificate.subject).toBe('CN=grüße');
    expect(certificate.subjectAltName).toBe('IP Address:0:0:0:0:0:0:0:1, IP Address:FE80:0:0:0:0:0:1:2, IP Address:2001:DB8:0:0:0:0:0:0, '
      + 'IP Address:2001:DB8:0:0:1:0:0:1, IP Address:10.0.0.255');
    expect(certificate.checkIP('fe80::1:2')).toBe('fe80::1:2');
    expect(() => chain({ ipAddresses: ['::ffff:1.2.3.4'] })).toThrow(/not an IP address this writes/);
    expect(() => chain({ dnsNames: ['grüße.example'] })).toThrow(/ASCII/);
  });

  test('serial numbers are positive, 16 octets at most, and differ', () => {
    const serials = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const serial = new X509Certificate(chain().cert).serialNumber;
      // OpenSSL writes a negative serial with a '-', and a positive one without its leading zero octets.
      expect(serial).toMatch(/^[0-9A-F]{2,32}$/);
      serials.add(serial);
    }
    expect(serials.size).toBe(20);
  });

  test('OpenSSL, through node:tls, trusts the chain, and reads the keyUsage and extKeyUsage it is given', async () => {
    expect(await handshake(chain())).toBe('ok');
    // A CA whose keyUsage lacks keyCertSign cannot have signed the leaf (OpenSSL's "key usage does not
    // include certificate signing", which node 20 has no code for).
    expect(await handshake(chain({}, { keyUsage: ['digitalSignature', 'cRLSign'] }))).not.toBe('ok');
    // A leaf for clients only is no server's.
    expect(await handshake(chain({ extendedKeyUsage: ['clientAuth'] }))).toBe('INVALID_PURPOSE');
    // A leaf not for localhost fails the name check.
    expect(await handshake(chain({ dnsNames: ['example.com'], ipAddresses: [] }))).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  test('refuses what it cannot write', () => {
    const own = keys();
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const base = { commonName: 'x', publicKey: own.publicKey, isCA: false, keyUsage: ['digitalSignature'] as const };
    expect(() => createCertificate({ ...base, signedBy: { commonName: 'x', ...rsa }, notBefore: new Date(0), notAfter: new Date() })).toThrow(/only EC/);
    expect(() => createCertificate({ ...base, signedBy: { commonName: 'x', ...own }, notBefore: new Date(), notAfter: new Date(0) })).toThrow(/notBefore/);
  });
});
