// A cluster's certificate authority: one self-signed CA per cluster that signs the API server's serving
// certificate and client certificates (subject CN = user name, O = groups, as kube-apiserver's x509
// authenticator reads them). Keys are ECDSA P-256 (fast to make, accepted by Go, Python and Node TLS) and
// PEM-encoded: certificates as CERTIFICATE, keys as PKCS#8 PRIVATE KEY.
import { webcrypto } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
// @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs the Reflect metadata polyfill first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const crypto = webcrypto;
x509.cryptoProvider.set(crypto as any);

const KEY_ALG = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN_ALG = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 3600 * 1000;

/** A certificate and its private key, PEM-encoded. */
export interface CertKeyPair {
  cert: string;
  key: string;
}

export interface ServingCertOptions {
  /** DNS names the server answers to (localhost is always included). */
  dnsNames?: string[];
  /** IP addresses the server answers on (127.0.0.1 and ::1 are always included). */
  ips?: string[];
  validityDays?: number;
}

export interface ClientCertOptions {
  /** The user name (subject CN). */
  user: string;
  /** Groups (subject O, one attribute each). */
  groups?: string[];
  validityDays?: number;
}

function escapeDnValue(v: string): string {
  // RFC 4514 escaping, so a name or group with a comma, plus or equals sign stays one attribute.
  return v.replace(/[\\,+"<>;=]/g, (c) => `\\${c}`).replace(/^[ #]|[ ]$/g, (c) => `\\${c}`);
}

async function newKeys(): Promise<CryptoKeyPair> {
  return (await crypto.subtle.generateKey(KEY_ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0];
  if (!der) throw new Error('no PEM block in the CA key');
  return crypto.subtle.importKey('pkcs8', der, KEY_ALG, true, ['sign']);
}

function serial(): string {
  // Positive 128-bit serial (the top bit cleared keeps the DER INTEGER positive).
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[0] &= 0x7f;
  return Buffer.from(b).toString('hex');
}

function validity(days: number) {
  const notBefore = new Date(Date.now() - 5 * 60 * 1000); // tolerate a little clock skew
  return { notBefore, notAfter: new Date(notBefore.getTime() + days * DAY_MS) };
}

export class CertificateAuthority {
  private constructor(
    readonly certPem: string,
    readonly keyPem: string,
    private readonly cert: x509.X509Certificate,
    private readonly key: CryptoKey,
  ) {}

  /** A new self-signed CA (`CN=<commonName>`), valid for ten years by default. */
  static async create(commonName = 'kemu-ca', validityDays = 3650): Promise<CertificateAuthority> {
    const keys = await newKeys();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=${escapeDnValue(commonName)}`,
      ...validity(validityDays),
      signingAlgorithm: SIGN_ALG,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return new CertificateAuthority(cert.toString('pem'), await keyPem(keys.privateKey), cert, keys.privateKey);
  }

  /** A CA from its PEM certificate and PKCS#8 key. */
  static async load(certPem: string, keyPem: string): Promise<CertificateAuthority> {
    return new CertificateAuthority(certPem, keyPem, new x509.X509Certificate(certPem), await importKey(keyPem));
  }

  /**
   * The CA kept in `dir` (ca.crt, ca.key), created there on first use. The key file is written 0600 and the
   * directory 0700; an existing file that is a symlink or not a regular file is refused.
   */
  static async loadOrCreate(dir: string, commonName = 'kemu-ca'): Promise<CertificateAuthority> {
    const certFile = path.join(dir, 'ca.crt');
    const keyFile = path.join(dir, 'ca.key');
    const cst = fs.lstatSync(certFile, { throwIfNoEntry: false });
    const kst = fs.lstatSync(keyFile, { throwIfNoEntry: false });
    if (cst || kst) {
      for (const [f, st] of [[certFile, cst], [keyFile, kst]] as const)
        if (!st?.isFile()) throw new Error(`${f} is missing or not a regular file; remove the CA files to make a new CA`);
      return CertificateAuthority.load(fs.readFileSync(certFile, 'utf8'), fs.readFileSync(keyFile, 'utf8'));
    }
    const ca = await CertificateAuthority.create(commonName);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeExclusive(keyFile, ca.keyPem, 0o600);
    writeExclusive(certFile, ca.certPem, 0o644);
    return ca;
  }

  private async issue(
    subject: string,
    extensions: x509.Extension[],
    days: number,
  ): Promise<CertKeyPair> {
    const keys = await newKeys();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject,
      issuer: this.cert.subject,
      ...validity(days),
      signingAlgorithm: SIGN_ALG,
      publicKey: keys.publicKey,
      signingKey: this.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        await x509.AuthorityKeyIdentifierExtension.create(this.cert.publicKey),
        ...extensions,
      ],
    });
    return { cert: cert.toString('pem'), key: await keyPem(keys.privateKey) };
  }

  /** A serving certificate for the API server (server auth), for localhost plus the given names and IPs. */
  async issueServing(opts: ServingCertOptions = {}): Promise<CertKeyPair> {
    const dns = [...new Set(['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', ...(opts.dnsNames ?? [])])];
    const ips = [...new Set(['127.0.0.1', '::1', ...(opts.ips ?? [])])];
    return this.issue(
      'CN=kube-apiserver',
      [
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          ...dns.map((value) => ({ type: 'dns' as const, value })),
          ...ips.map((value) => ({ type: 'ip' as const, value })),
        ]),
      ],
      opts.validityDays ?? 365,
    );
  }

  /** A client certificate for a user (client auth): CN = user, one O per group. */
  async issueClient(opts: ClientCertOptions): Promise<CertKeyPair> {
    if (!opts.user) throw new Error('a client certificate needs a user name');
    const subject = [
      ...(opts.groups ?? []).map((g) => `O=${escapeDnValue(g)}`),
      `CN=${escapeDnValue(opts.user)}`,
    ].join(', ');
    return this.issue(
      subject,
      [
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      ],
      opts.validityDays ?? 365,
    );
  }
}

/** The user a verified client certificate names: CN as the name, each O as a group. */
export function userFromCertificate(der: Buffer): { name: string; groups: string[] } {
  const cert = new x509.X509Certificate(der);
  const name = cert.subjectName.getField('CN')[0] ?? '';
  return { name, groups: cert.subjectName.getField('O') };
}

function writeExclusive(file: string, text: string, mode: number) {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, mode);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
