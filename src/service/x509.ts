import { createHash, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import {
  bitString, boolean, explicit, implicitPrimitive, lastElementValue, namedBits, objectIdentifier, octetString,
  printableString, sequence, set, time, unsignedInteger, utf8String,
} from './der.js';

/**
 * X.509 v3 certificates (RFC 5280) made with node:crypto alone, for the local service's private CA
 * and its localhost certificate (tls.ts). Only what that needs: EC keys signed with ECDSA over
 * SHA-256, a subject of one common name, and the extensions below. Node, browsers and OpenSSL read
 * these; nothing here parses certificates.
 */

/** RFC 5280 §4.2.1.3: the keyUsage bits, by their bit numbers. */
const KEY_USAGE_BITS = {
  digitalSignature: 0,
  nonRepudiation: 1,
  keyEncipherment: 2,
  dataEncipherment: 3,
  keyAgreement: 4,
  keyCertSign: 5,
  cRLSign: 6,
} as const;
export type KeyUsage = keyof typeof KEY_USAGE_BITS;

/** RFC 5280 §4.2.1.12: id-kp-serverAuth and id-kp-clientAuth. */
const EXTENDED_KEY_USAGE = { serverAuth: '1.3.6.1.5.5.7.3.1', clientAuth: '1.3.6.1.5.5.7.3.2' } as const;
export type ExtendedKeyUsage = keyof typeof EXTENDED_KEY_USAGE;

const OID = {
  commonName: '2.5.4.3',
  /** RFC 5758 §3.2: ecdsa-with-SHA256, whose AlgorithmIdentifier has no parameters. */
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
};

export interface CertificateSpec {
  /** The subject's common name: its whole distinguished name. */
  commonName: string;
  /** The subject's public key (EC). */
  publicKey: KeyObject;
  /** Who signs: the CA's name and keys, or the subject's own for a self-signed certificate. */
  signedBy: { commonName: string; privateKey: KeyObject; publicKey: KeyObject };
  notBefore: Date;
  notAfter: Date;
  /** A CA (basicConstraints cA, critical, path length 0: it signs end-entity certificates only) or an end entity. */
  isCA: boolean;
  /** At least one: RFC 5280 §4.2.1.3 wants at least one bit set when the extension is there, and it always is. */
  keyUsage: readonly KeyUsage[];
  extendedKeyUsage?: readonly ExtendedKeyUsage[];
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
}

/** The certificate `spec` describes, signed by `spec.signedBy`, as PEM. */
export function createCertificate(spec: CertificateSpec): string {
  if (spec.signedBy.privateKey.asymmetricKeyType !== 'ec') throw new Error('x509: only EC signing keys are supported');
  if (!(spec.notBefore < spec.notAfter)) throw new Error('x509: notBefore must come before notAfter');
  if (spec.keyUsage.length === 0) throw new Error('x509: name at least one keyUsage');
  const subjectPublicKeyInfo = spec.publicKey.export({ type: 'spki', format: 'der' });
  // RFC 5758 §3.2 / RFC 5280 §4.1.1.2: the same AlgorithmIdentifier inside and outside the signed part.
  const signatureAlgorithm = sequence(objectIdentifier(OID.ecdsaWithSha256));
  // RFC 5280 §4.1.2.2: a positive serial of at most 20 octets, unique per CA: 16 random octets, top bit clear.
  const serial = randomBytes(16);
  serial[0]! &= 0x7f;
  const tbsCertificate = sequence(
    explicit(0, unsignedInteger(2)), // §4.1.2.1: version v3 (2), for the extensions
    unsignedInteger(serial),
    signatureAlgorithm,
    name(spec.signedBy.commonName), // §4.1.2.4: issuer, encoded as the CA's subject is
    sequence(time(spec.notBefore), time(spec.notAfter)), // §4.1.2.5
    name(spec.commonName), // §4.1.2.6
    subjectPublicKeyInfo, // §4.1.2.7: as node exports it
    explicit(3, sequence(...extensions(spec, subjectPublicKeyInfo))), // §4.1.2.9
  );
  // RFC 5280 §4.1.1.3 with RFC 5758 §3.2: ECDSA's signature is DER already (Ecdsa-Sig-Value), in a BIT STRING.
  const signature = sign('sha256', tbsCertificate, { key: spec.signedBy.privateKey, dsaEncoding: 'der' });
  return pem(sequence(tbsCertificate, signatureAlgorithm, bitString(signature)));
}

/**
 * RFC 5280 §4.1.2.4 / §4.1.2.6: a Name of one RDN holding the common name, as a PrintableString when
 * it fits one, otherwise a UTF8String (the two encodings §4.1.2.6 allows for new certificates).
 */
function name(commonName: string): Buffer {
  const value = /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(commonName) ? printableString(commonName) : utf8String(commonName);
  return sequence(set(sequence(objectIdentifier(OID.commonName), value)));
}

function extensions(spec: CertificateSpec, subjectPublicKeyInfo: Buffer): Buffer[] {
  const list = [
    // §4.2.1.9: cA TRUE in a CA certificate, marked critical; an end entity's is an empty SEQUENCE (cA FALSE by default).
    extension(OID.basicConstraints, spec.isCA, spec.isCA ? sequence(boolean(true), unsignedInteger(0)) : sequence()),
    // §4.2.1.3: SHOULD be critical.
    extension(OID.keyUsage, true, namedBits(spec.keyUsage.map((usage) => KEY_USAGE_BITS[usage]))),
    // §4.2.1.2: method (1), the SHA-1 of the subjectPublicKey BIT STRING's bits; MUST in a CA certificate.
    extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier(subjectPublicKeyInfo))),
  ];
  if (!spec.signedBy.publicKey.equals(spec.publicKey)) {
    // §4.2.1.1: AuthorityKeyIdentifier { keyIdentifier [0] IMPLICIT }, the CA's subjectKeyIdentifier, so
    // a verifier (OpenSSL) picks the right issuer; it MAY be left out of a self-signed certificate.
    const caKeyId = keyIdentifier(spec.signedBy.publicKey.export({ type: 'spki', format: 'der' }));
    list.push(extension(OID.authorityKeyIdentifier, false, sequence(implicitPrimitive(0, caKeyId))));
  }
  if (spec.extendedKeyUsage?.length) {
    // §4.2.1.12: SEQUENCE OF KeyPurposeId.
    list.push(extension(OID.extKeyUsage, false, sequence(...spec.extendedKeyUsage.map((usage) => objectIdentifier(EXTENDED_KEY_USAGE[usage])))));
  }
  const altNames = [
    // §4.2.1.6: dNSName [2] IMPLICIT IA5String, iPAddress [7] IMPLICIT OCTET STRING (4 or 16 octets).
    ...(spec.dnsNames ?? []).map((dnsName) => implicitPrimitive(2, Buffer.from(ia5(dnsName), 'ascii'))),
    ...(spec.ipAddresses ?? []).map((address) => implicitPrimitive(7, ipOctets(address))),
  ];
  // §4.2.1.6: non-critical, as the subject's name is not empty.
  if (altNames.length) list.push(extension(OID.subjectAltName, false, sequence(...altNames)));
  return list;
}

/** §4.1: Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE (left out when false, as DER asks), extnValue OCTET STRING }. */
function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return sequence(objectIdentifier(oid), ...(critical ? [boolean(true)] : []), octetString(value));
}

function keyIdentifier(subjectPublicKeyInfo: Buffer): Buffer {
  const { tag, value } = lastElementValue(subjectPublicKeyInfo);
  if (tag !== 0x03 || value[0] !== 0) throw new Error('x509: SubjectPublicKeyInfo does not end in a whole-octet BIT STRING');
  return createHash('sha1').update(value.subarray(1)).digest();
}

function ia5(text: string): string {
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) throw new Error(`x509: a dNSName is ASCII (IA5String): ${JSON.stringify(text)}`);
  }
  return text;
}

/** An IP address's octets in network order: 4 for IPv4, 16 for IPv6 (RFC 5280 §4.2.1.6). */
function ipOctets(address: string): Buffer {
  if (isIPv4(address)) return Buffer.from(address.split('.').map(Number));
  if (!isIPv6(address) || address.includes('.') || address.includes('%')) throw new Error(`x509: not an IP address this writes: ${address}`);
  const [head, tail] = address.split('::') as [string, string | undefined];
  const groups = (part: string | undefined): number[] => (part ? part.split(':').map((group) => Number.parseInt(group, 16)) : []);
  const before = groups(head);
  const after = groups(tail);
  const zeros = tail === undefined ? [] : new Array<number>(8 - before.length - after.length).fill(0);
  const octets = Buffer.alloc(16);
  [...before, ...zeros, ...after].forEach((group, index) => octets.writeUInt16BE(group, index * 2));
  return octets;
}

function pem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
