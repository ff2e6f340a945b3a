// The read-only add-ons `kemu up` runs under their upstream identities: cluster DNS as CoreDNS's ServiceAccount
// (system:coredns) and each node's network policy agent as calico-node's. Their informers list and watch once,
// at start, so each is started here on a store authorized as `kemu up` authorizes it: with its binding it
// syncs and does its work; without it, its start reports kube-apiserver's 403 and waits until the binding
// is back.
import { CertificateAuthority, type ClusterAuth, ServiceAccountKeys, startClusterAuth } from '@kemu/apiserver';
import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { DnsServer } from '@kemu/dns';
import type { RuleSink } from '@kemu/kube-proxy';
import { PolicyAgent } from '@kemu/network-policy';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADDON_IDENTITIES, type Addon, addonUser, ensureAddonIdentities } from './component-identities.js';

let store: Store;
let auth: ClusterAuth;
let stops: Array<() => Promise<void>> = [];

beforeEach(async () => {
  store = await createMemoryStore();
  const ca = await CertificateAuthority.create('identities-ca');
  auth = await startClusterAuth({ store, caCertPem: ca.certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
  await ensureAddonIdentities(store);
  await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
});

afterEach(async () => {
  for (const s of stops.reverse()) await s();
  stops = [];
  await auth.stop();
  await store.close();
});

async function until(what: string, fn: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Removes the add-on's ClusterRoleBinding; returns how to put it back. */
async function unbind(addon: Addon): Promise<() => Promise<void>> {
  const name = ADDON_IDENTITIES[addon].binding;
  const binding = await store.get('ClusterRoleBinding', '', name);
  await store.delete('ClusterRoleBinding', '', name);
  const { metadata, ...rest } = binding;
  return async () => {
    await store.create({ ...rest, metadata: { name: metadata.name } } as KubeObject);
  };
}

/** A node's filter table as the agent sees it: what the last restore wrote. */
function recordingSink() {
  const sink = { last: '', async save() { return ''; }, async restore(text: string) { sink.last = text; } };
  return sink as RuleSink & { last: string };
}

const denyWeb = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny-web', namespace: 'shop' }, spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'] } };

describe('add-on identities', () => {
  it('runs cluster DNS as kube-system/coredns: it syncs with system:coredns and reports the 403 without it', async () => {
    const rebind = await unbind('coredns');
    const errors: string[] = [];
    const dns = new DnsServer({ store: auth.storeFor(addonUser('coredns')), host: '127.0.0.1', port: 0, onError: (e) => errors.push((e as Error).message) });
    stops.push(() => dns.stop());
    let started = false;
    const start = dns.start().then(() => (started = true));
    await until('a 403', () => errors.some((m) => /^failed to list \*v1\.\w+: \w+ is forbidden: User "system:serviceaccount:kube-system:coredns" cannot list resource "\w+" in API group "[\w.]*" at the cluster scope$/.test(m)));
    expect(started).toBe(false);
    await rebind();
    await start;
    expect(started).toBe(true);
  }, 30_000);

  it('runs the network policy agent as kube-system/calico-node: it programs policies with its role and reports the 403 without it', async () => {
    const rebind = await unbind('policyAgent');
    await store.create(denyWeb);
    const web = await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' } }, spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'x' }] } });
    await store.updateStatus({ ...web, status: { phase: 'Running', podIP: '10.244.1.2', podIPs: [{ ip: '10.244.1.2' }] } });
    const errors: string[] = [];
    const sink = recordingSink();
    const agent = new PolicyAgent({ store: auth.storeFor(addonUser('policyAgent')), nodeName: 'node-a', sink, minSyncPeriodMs: 10, onError: (e) => errors.push((e as Error).message) });
    stops.push(() => agent.stop());
    const start = agent.start();
    await until('a 403', () => errors.some((m) => m.includes('is forbidden: User "system:serviceaccount:kube-system:calico-node" cannot list resource')));
    expect(sink.last).toBe('');
    await rebind();
    await start;
    await until('the policy programmed for the pod', () => sink.last.includes('10.244.1.2/32'));
  }, 30_000);
});
