// A component of `kemu up` whose role lacks a rule its informers need says so in the cluster's log, as its
// upstream reflector logs it (`failed to list *v1.Service: services is forbidden: User ...`), under the
// component's name, once per backoff step; a start waiting for that cache reports, after 30 s, which cache
// has not synced and why, and goes on once the rule is back instead of hanging without a word. Checked on a
// node's kube-proxy added at runtime without its binding, and on the CSI attacher (whose informers have no
// onError of their own) booting with a ClusterRole that lacks nodes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CertificateAuthority, type ClusterAuth, ServiceAccountKeys, startClusterAuth } from '@kemu/apiserver';
import type { KubeObject } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from './cluster.js';
import { client, up } from './commands.js';
import { ADDON_IDENTITIES, ensureAddonIdentities } from './component-identities.js';
import { nodeAdd } from './node-add.js';
import { paths } from './state.js';

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-informer-errors-'));
let running: { stop(): Promise<void> } | undefined;
const api = () => client(stateDir);
const quiet = { log() {}, err() {} };
const RBAC = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';
/** The log `kemu up` writes its components' errors to. */
const logLines = () => (fs.existsSync(paths(stateDir).log) ? fs.readFileSync(paths(stateDir).log, 'utf8').split('\n') : []);

async function until(what: string, fn: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  running = await up({ stateDir, nodes: 1, fast: true, mergeKubeconfig: false }, quiet);
}, 60_000);

afterAll(async () => {
  await running?.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

describe('kemu up reports the informer errors of its components', () => {
  it("names the component, the type and the 403 of each refused list, reports a start's unsynced cache after 30 s, and goes on once the binding is back", async () => {
    const binding = JSON.parse((await api().request('GET', `${RBAC}/system:node-proxier`)).text);
    expect((await api().request('DELETE', `${RBAC}/system:node-proxier`)).code).toBe(200);
    // The new node's kube-proxy starts without its binding: its start waits for caches that cannot fill.
    let added: string[] | undefined;
    const adding = nodeAdd({ count: 1, taints: [], stateDir }, quiet).then((names) => (added = names));
    const forbidden = 'services is forbidden: User "system:kube-proxy" cannot list resource "services" in API group "" at the cluster scope';
    const refused = () => logLines().filter((l) => l.endsWith(` kemu-node-2: kube-proxy: failed to list *v1.Service: ${forbidden}`));
    await until('the refused list in the log', () => refused().length > 0);
    await until('the report of the unsynced cache', () =>
      logLines().some((l) => l.includes(` kemu-node-2: kube-proxy: waiting for caches to sync: *v1.Service has not synced after 30s (last error: failed to list *v1.Service: ${forbidden})`)),
      45_000,
    );
    // Retried with backoff (100 ms doubling to 30 s): a handful of lines in 30 s, not one per retry loop turn.
    expect(refused().length).toBeGreaterThan(1);
    expect(refused().length).toBeLessThan(15);
    expect(added).toBeUndefined();
    const { metadata, ...rest } = binding;
    expect((await api().request('POST', RBAC, { ...rest, metadata: { name: metadata.name } })).code).toBe(201);
    await adding;
    expect(added).toEqual(['kemu-node-2']);
    const after = refused().length;
    await new Promise((r) => setTimeout(r, 1000));
    expect(refused()).toHaveLength(after);
  }, 120_000);
});

describe('a component started without a rule its informers need', () => {
  it("the CSI attacher's role without nodes: the start reports the attacher's refused Node list, and finishes once the rule is back", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-informer-errors-boot-'));
    const reported: string[] = [];
    let auth: ClusterAuth | undefined;
    let withoutNodes: (() => Promise<void>) | undefined;
    const role = ADDON_IDENTITIES.attacher.clusterRole;
    const starting = Cluster.start({
      stateDir: dir,
      nodes: 1,
      fast: true,
      // The identities `kemu up` sets up, with the nodes rule taken out of the attacher's ClusterRole.
      componentStores: async (s) => {
        const ca = await CertificateAuthority.create('informer-errors-ca');
        auth = await startClusterAuth({ store: s, caCertPem: ca.certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
        await ensureAddonIdentities(s);
        const full = await s.get('ClusterRole', '', role);
        const rules = (full as { rules: Array<{ resources?: string[] }> }).rules;
        await s.update({ ...full, rules: rules.filter((r) => !r.resources?.includes('nodes')) } as KubeObject);
        withoutNodes = async () => {
          const now = await s.get('ClusterRole', '', role);
          await s.update({ ...now, rules } as KubeObject);
        };
        return (user) => auth!.storeFor(user);
      },
      onError: (err, ctx) => reported.push(`${ctx}: ${(err as Error)?.message ?? err}`),
    });
    let cluster: Cluster | undefined;
    try {
      const line = 'attacher: failed to list *v1.Node: nodes is forbidden: User "system:serviceaccount:kube-system:csi-attacher" cannot list resource "nodes" in API group "" at the cluster scope';
      await until("the attacher's refused list", () => reported.includes(line));
    } finally {
      await withoutNodes?.();
      cluster = await starting;
      await cluster.stop();
      await auth?.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
