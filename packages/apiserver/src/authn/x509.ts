// Client-certificate authentication, as kube-apiserver's x509 authenticator: a certificate that chains to
// the cluster CA, is within its validity period and allows client auth names the user (CN) and its groups
// (O). The chain is checked here even when the TLS layer checked it too, so a server that accepts any
// certificate at the handshake (to answer 401 rather than drop the connection) is still safe.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { AUTHENTICATED_GROUP, type AuthenticationRequest, type AuthenticationResult, type Authenticator } from '../auth-seams.js';
import { UnauthorizedError } from './unauthorized.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

export class X509Authenticator implements Authenticator {
  private readonly ca: x509.X509Certificate;
  /** Verified leaf certificates by their DER (a TLS session sends the same one on every request). */
  private readonly verified = new Map<string, { name: string; groups: string[]; notAfter: number }>();

  constructor(caCertPem: string, private readonly now: () => Date = () => new Date()) {
    this.ca = new x509.X509Certificate(caCertPem);
  }

  async authenticate(req: AuthenticationRequest): Promise<AuthenticationResult | null> {
    const leaf = req.peerCertificates?.[0] ?? req.unverifiedPeerCertificates?.[0];
    if (!leaf || leaf.length === 0) return null;
    const key = leaf.toString('base64');
    const now = this.now();
    let hit = this.verified.get(key);
    if (!hit) {
      hit = await this.verify(leaf, now);
      if (this.verified.size > 4096) this.verified.clear();
      this.verified.set(key, hit);
    }
    if (now.getTime() > hit.notAfter) throw new UnauthorizedError('x509: certificate has expired or is not yet valid');
    return { user: { name: hit.name, groups: [...hit.groups, AUTHENTICATED_GROUP] } };
  }

  private async verify(der: Buffer, now: Date): Promise<{ name: string; groups: string[]; notAfter: number }> {
    let cert: x509.X509Certificate;
    try {
      cert = new x509.X509Certificate(der);
    } catch {
      throw new UnauthorizedError('x509: malformed certificate');
    }
    if (cert.issuer !== this.ca.subject) throw new UnauthorizedError('x509: certificate signed by unknown authority');
    const ok = await cert.verify({ publicKey: this.ca.publicKey, signatureOnly: true }).catch(() => false);
    if (!ok) throw new UnauthorizedError('x509: certificate signed by unknown authority');
    if (now < cert.notBefore || now > cert.notAfter) throw new UnauthorizedError('x509: certificate has expired or is not yet valid');
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
    if (eku && !eku.usages.map(String).includes(CLIENT_AUTH)) {
      throw new UnauthorizedError('x509: certificate specifies an incompatible key usage');
    }
    const name = cert.subjectName.getField('CN')[0] ?? '';
    if (!name) throw new UnauthorizedError('x509: certificate has no common name');
    return { name, groups: cert.subjectName.getField('O'), notAfter: cert.notAfter.getTime() };
  }
}
