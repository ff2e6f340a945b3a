import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { CertificateAuthority, userFromCertificate } from './ca.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-ca-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the cluster CA', () => {
  it('issues a serving and a client certificate that OpenSSL verifies in a mutual TLS handshake', async () => {
    const ca = await CertificateAuthority.create('test-ca');
    const serving = await ca.issueServing({ dnsNames: ['api.test'] });
    const client = await ca.issueClient({ user: 'alice, the admin', groups: ['system:masters', 'dev'] });
    const server = tls.createServer({ ...serving, ca: ca.certPem, requestCert: true, rejectUnauthorized: true }, (s) => {
      const peer = s.getPeerCertificate();
      s.end(JSON.stringify({ authorized: s.authorized, user: userFromCertificate(peer.raw) }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const text = await new Promise<string>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port, servername: 'api.test', ca: ca.certPem, ...client }, () => {
          expect(s.authorized).toBe(true);
        });
        let buf = '';
        s.on('data', (d) => (buf += d));
        s.on('end', () => resolve(buf));
        s.on('error', reject);
      });
      expect(JSON.parse(text)).toEqual({ authorized: true, user: { name: 'alice, the admin', groups: ['system:masters', 'dev'] } });
      // A certificate from another CA is refused by the server.
      const other = await (await CertificateAuthority.create('other')).issueClient({ user: 'mallory' });
      const refused = await new Promise<string>((resolve) => {
        const s = tls.connect({ host: '127.0.0.1', port, servername: 'api.test', ca: ca.certPem, ...other });
        s.on('error', (e) => resolve(e.message));
        s.on('data', () => resolve('accepted'));
        s.on('end', () => resolve('ended'));
      });
      expect(refused).not.toBe('accepted');
    } finally {
      server.close();
    }
  });

  it('marks the CA as a CA and the serving certificate for localhost and loopback addresses', async () => {
    const ca = await CertificateAuthority.create();
    const caCert = new crypto.X509Certificate(ca.certPem);
    expect(caCert.ca).toBe(true);
    const serving = new crypto.X509Certificate((await ca.issueServing({ ips: ['10.0.0.1'] })).cert);
    expect(serving.ca).toBe(false);
    expect(serving.checkIssued(caCert)).toBe(true);
    expect(serving.verify(caCert.publicKey)).toBe(true);
    expect(serving.checkHost('localhost')).toBe('localhost');
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.checkIP('10.0.0.1')).toBe('10.0.0.1');
    expect(serving.checkHost('evil.example')).toBeUndefined();
  });

  it('keeps its CA on disk with an owner-only key and loads the same CA again', async () => {
    const caDir = path.join(dir, 'pki');
    const a = await CertificateAuthority.loadOrCreate(caDir);
    expect(fs.statSync(path.join(caDir, 'ca.key')).mode & 0o777).toBe(0o600);
    const b = await CertificateAuthority.loadOrCreate(caDir);
    expect(b.certPem).toBe(a.certPem);
    const issued = new crypto.X509Certificate((await b.issueClient({ user: 'u' })).cert);
    expect(issued.verify(new crypto.X509Certificate(a.certPem).publicKey)).toBe(true);
  });

  it('refuses a CA key that is a symlink', async () => {
    const caDir = path.join(dir, 'link');
    fs.mkdirSync(caDir);
    fs.writeFileSync(path.join(dir, 'elsewhere'), 'x');
    fs.symlinkSync(path.join(dir, 'elsewhere'), path.join(caDir, 'ca.key'));
    fs.writeFileSync(path.join(caDir, 'ca.crt'), 'x');
    await expect(CertificateAuthority.loadOrCreate(caDir)).rejects.toThrow(/not a regular file/);
  });
});
