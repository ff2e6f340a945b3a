// A cluster's TLS material and admin kubeconfig, kept in its state directory: the CA (pki/ca.crt, ca.key,
// made once and reused across restarts), a serving certificate for the API server's addresses, and an admin
// client certificate (CN=kemu-admin, O=system:masters) in `kubeconfig`, written owner-only.
import fs from 'node:fs';
import path from 'node:path';
import { CertificateAuthority } from './ca.js';
import { buildKubeconfig, type Kubeconfig, kubeconfigYaml, writeKubeconfigFile } from './kubeconfig.js';
import type { TlsServing } from './server.js';

export interface ClusterCredentials {
  ca: CertificateAuthority;
  serving: TlsServing;
  /** Builds the admin kubeconfig for the server's URL (known once it listens) and writes it. */
  writeKubeconfig(serverUrl: string): { path: string; config: Kubeconfig };
  kubeconfigPath: string;
}

export async function clusterCredentials(stateDir: string, opts: { name: string; host?: string }): Promise<ClusterCredentials> {
  const ca = await CertificateAuthority.loadOrCreate(path.join(stateDir, 'pki'), `kemu-${opts.name}-ca`);
  const host = opts.host ?? '127.0.0.1';
  const isIp = /^[\d.]+$|:/.test(host);
  const serving = await ca.issueServing(isIp ? { ips: host === '0.0.0.0' || host === '::' ? [] : [host] } : { dnsNames: [host] });
  const admin = await ca.issueClient({ user: 'kemu-admin', groups: ['system:masters'] });
  const kubeconfigPath = path.join(stateDir, 'kubeconfig');
  return {
    ca,
    serving: { ...serving, clientCA: ca.certPem },
    kubeconfigPath,
    writeKubeconfig(serverUrl: string) {
      const config = buildKubeconfig({ name: opts.name, server: serverUrl, caPem: ca.certPem, clientCertPem: admin.cert, clientKeyPem: admin.key });
      fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
      writeKubeconfigFile(kubeconfigPath, kubeconfigYaml(config));
      return { path: kubeconfigPath, config };
    },
  };
}
