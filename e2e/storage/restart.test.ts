// The provisioner as real processes on a shared etcd store: killed with SIGKILL in the middle of
// CreateVolume, the standby replica (leader election) takes over; the driver ends up with one volume and
// the cluster with one PV.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createEtcdStore, type EtcdStore, type Lease } from '@kemu/core';
import { PersistentVolumeBinder } from '@kemu/core/controllers';
import { DEFAULT_DRIVER_NAME as DRIVER } from '@kemu/csi';
import { type CsiConnection, connectCsiSocket } from '@kemu/csi-sidecars';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './harness.js';
import { peers, requirePeers } from '@kemu/test-peers';
import { type Proc, runSource, startEtcd } from './processes.js';

describe.runIf(requirePeers('the process restart tests', [peers.etcd]))('provisioner processes on etcd', () => {
  let etcd: Awaited<ReturnType<typeof startEtcd>>;
  let store: EtcdStore;
  let binder: PersistentVolumeBinder;
  let driver: Proc;
  let conn: CsiConnection;
  const procs: Proc[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-restart-'));
  const sock = path.join(dir, 'csi.sock');

  beforeAll(async () => {
    etcd = await startEtcd();
    store = await createEtcdStore({ endpoints: etcd.endpoint });
    binder = new PersistentVolumeBinder({ store });
    await binder.start();
    // biome-ignore format: flag pairs
    driver = runSource('packages/csi/src/cli.ts', [
      '--endpoint', `unix://${sock}`, '--node-id', 'node-1', '--backend', 'sim', '--state-dir', path.join(dir, 'state'),
      '--sim-latency', 'createVolume=2500',
    ]);
    conn = connectCsiSocket(`unix://${sock}`);
    await until('driver up', () => conn.identity.GetPluginInfo({}, { timeoutMs: 1000 }), 60_000);
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) await p.kill('SIGKILL');
    await binder?.stop();
    conn?.close();
    await driver?.kill();
    await store?.close();
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  function provisioner(): Proc {
    // biome-ignore format: flag pairs
    const p = runSource('packages/csi-sidecars/src/provisioner-cli.ts', [
      '--csi-address', sock, '--store', etcd.endpoint.replace('http://', 'etcd://'),
      '--leader-election', '--leader-election-namespace', 'kube-system',
      '--leader-election-lease-duration', '3s', '--leader-election-renew-deadline', '2s', '--leader-election-retry-period', '500ms',
      '--retry-interval-start', '200ms', '--timeout', '10s', '--worker-threads', '4',
    ]);
    procs.push(p);
    return p;
  }

  it('SIGKILL of the leading provisioner mid-CreateVolume: the standby finishes with one volume and one PV', async () => {
    const a = provisioner();
    const leaseName = DRIVER.replace(/[/.]/g, '-');
    const lease = await until(
      'a leader',
      async () =>
        ((await store.get('Lease', 'kube-system', leaseName).catch(() => undefined)) as Lease | undefined)
          ?.spec?.holderIdentity,
      60_000,
    );
    const b = provisioner();
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'sc' },
      provisioner: DRIVER,
    });
    const claim = await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: 'sc',
      },
    });
    // The leader announces the attempt, then sits in the driver's 2.5 s CreateVolume: kill it there.
    await until(
      'provisioning started',
      async () =>
        (await store.list('Event', { fieldSelector: 'involvedObject.name=data' })).items.some(
          (e) => e.reason === 'Provisioning',
        ),
      30_000,
    );
    await new Promise((r) => setTimeout(r, 300));
    await a.kill('SIGKILL');
    expect((await store.list('PersistentVolume')).items).toHaveLength(0);
    // The standby takes the lease once it expires and provisions the same claim.
    const bound = await until(
      'claim bound by the standby',
      async () => {
        const c = await store.get('PersistentVolumeClaim', 'default', 'data');
        return c.status?.phase === 'Bound' ? c : undefined;
      },
      60_000,
    );
    const newLeader = ((await store.get('Lease', 'kube-system', leaseName)) as Lease).spec?.holderIdentity;
    expect(newLeader).not.toBe(lease);
    const vols = (await conn.controller.ListVolumes({ maxEntries: 0, startingToken: '' })).entries ?? [];
    expect(vols).toHaveLength(1);
    const pvs = (await store.list('PersistentVolume')).items;
    expect(pvs).toHaveLength(1);
    expect(pvs[0]!.metadata.name).toBe(`pvc-${claim.metadata.uid}`);
    expect(pvs[0]!.spec.csi?.volumeHandle).toBe(vols[0]!.volume!.volumeId);
    expect(bound.spec.volumeName).toBe(pvs[0]!.metadata.name);
    expect(b.proc.exitCode).toBeNull();
  }, 180_000);
});
