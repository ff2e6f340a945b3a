// `kemu kubeconfig --user NAME --group G`: a kubeconfig for another user of a running cluster, with a client
// certificate (CN = user, O = groups) signed by the cluster CA kept in the state directory; server and CA
// are taken from the cluster's admin kubeconfig.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { CertificateAuthority } from '../ca.js';
import { buildKubeconfig, kubeconfigYaml } from '../kubeconfig.js';

export interface UserKubeconfigOptions {
  /** The cluster's state directory (holds pki/ca.crt, pki/ca.key and the admin kubeconfig). */
  stateDir: string;
  /** The cluster's name (kubeconfig entries are kemu-<name>). */
  name: string;
  user: string;
  groups?: string[];
  validityDays?: number;
}

export async function userKubeconfig(opts: UserKubeconfigOptions): Promise<string> {
  if (!opts.user || /[\r\n\0]/.test(opts.user) || (opts.groups ?? []).some((g) => !g || /[\r\n\0]/.test(g))) {
    throw new Error('a user name and each group must be non-empty, on one line');
  }
  const admin = path.join(opts.stateDir, 'kubeconfig');
  if (!fs.existsSync(admin)) throw new Error(`no kubeconfig in ${opts.stateDir}: start a cluster with \`kemu up\``);
  const cfg = YAML.parse(fs.readFileSync(admin, 'utf8')) as { clusters?: { cluster?: { server?: string } }[] };
  const server = cfg.clusters?.[0]?.cluster?.server;
  if (!server) throw new Error(`${admin} names no server`);
  const ca = await CertificateAuthority.loadOrCreate(path.join(opts.stateDir, 'pki'));
  const cert = await ca.issueClient({ user: opts.user, groups: opts.groups ?? [], validityDays: opts.validityDays });
  return kubeconfigYaml(buildKubeconfig({ name: opts.name, server, caPem: ca.certPem, clientCertPem: cert.cert, clientKeyPem: cert.key, user: opts.user }));
}
