// Failure handling of the provisioning path: a driver that fails and then recovers, a provisioner that
// dies in the middle of CreateVolume, a driver socket that is not there yet, a node without room.
import { grpc } from '@kemu/proto';
import type { CsiConnection } from '@kemu/csi-sidecars';
import type { SimBackend } from '@kemu/csi';
import { afterEach, describe, expect, it } from 'vitest';
import { Stack, until } from './harness.js';

let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

describe('provisioning faults', () => {
  it('CreateVolume failing three times then succeeding gives one volume and one PV', async () => {
    s = await new Stack({
      backend: 'sim',
      sim: {
        failures: [
          { op: 'createVolume', code: grpc.status.UNAVAILABLE, times: 3, message: 'backend is restarting' },
        ],
      },
    }).start();
    await s.storageClass('sc');
    await s.claim('c', { storageClassName: 'sc' });
    const claim = await s.bound('c');
    const sim = s.driver!.backend as SimBackend;
    expect(sim.calls.createVolume).toBe(4);
    expect((await s.driverVolumes()).size).toBe(1);
    const pvs = (await s.store.list('PersistentVolume')).items;
    expect(pvs.map((p) => p.metadata.name)).toEqual([`pvc-${claim.metadata.uid}`]);
    const failed = (await s.events('c')).find((e) => e.reason === 'ProvisioningFailed');
    expect(failed?.message).toBe(
      'failed to provision volume with StorageClass "sc": rpc error: code = Unavailable desc = backend is restarting',
    );
    expect((failed as { count?: number }).count).toBe(3);
    expect(s.provisioner.inProgress.size).toBe(0);
  });

  it('a provisioner that dies during CreateVolume leaves no orphan and no duplicate once restarted', async () => {
    s = await new Stack({ backend: 'sim', sim: { latencyMs: { createVolume: 200 } } }).start();
    const stack = s;
    // The first provisioner's request reaches the driver, but the process dies before the answer arrives.
    await stack.provisioner.stop();
    const real = stack.conn;
    const dying: CsiConnection = {
      ...real,
      controller: {
        ...real.controller,
        CreateVolume: async (req, o) => {
          void real.controller.CreateVolume(req, o).catch(() => {});
          await new Promise((r) => setTimeout(r, 20));
          throw Object.assign(new Error('14 UNAVAILABLE: connection closed'), {
            code: grpc.status.UNAVAILABLE,
            details: 'connection closed',
          });
        },
      },
    };
    const first = stack.newProvisioner({ csi: dying });
    await first.start();
    await stack.storageClass('sc');
    const claim = await stack.claim('c', { storageClassName: 'sc' });
    await until('first attempt', async () => (stack.driver!.backend as SimBackend).calls.createVolume === 1);
    await first.stop();
    await until('driver finished creating', async () => (await stack.driverVolumes()).size === 1);
    expect((await stack.store.list('PersistentVolume')).items).toHaveLength(0);
    // A fresh process knows nothing of the first one; the claim alone leads it to the same volume.
    stack.provisioner = stack.newProvisioner();
    await stack.provisioner.start();
    await stack.bound('c');
    const vols = await stack.driverVolumes();
    expect(vols.size).toBe(1);
    const pvs = (await stack.store.list('PersistentVolume')).items;
    expect(pvs).toHaveLength(1);
    expect(pvs[0]!.metadata.name).toBe(`pvc-${claim.metadata.uid}`);
    expect(vols.has(pvs[0]!.spec.csi!.volumeHandle)).toBe(true);
  });

  it('a claim deleted while CreateVolume may still be running takes the volume along', async () => {
    s = await new Stack({
      backend: 'sim',
      sim: { latencyMs: { createVolume: 600 } },
      provisioner: { timeoutMs: 200 },
    }).start();
    const stack = s;
    await stack.storageClass('sc');
    await stack.claim('c', { storageClassName: 'sc' });
    // The call reaches the driver and times out (DeadlineExceeded, not final); the driver goes on.
    await until(
      'driver working on it',
      async () => (stack.driver!.backend as SimBackend).calls.createVolume === 1,
    );
    await until('timed out once', async () =>
      (await stack.events('c')).some((e) => e.message?.includes('DeadlineExceeded')),
    );
    expect(stack.provisioner.inProgress.has('default/c')).toBe(true);
    await stack.store.delete('PersistentVolumeClaim', 'default', 'c');
    await until(
      'volume cleaned up',
      async () =>
        (stack.driver!.backend as SimBackend).calls.deleteVolume >= 1 &&
        (await stack.driverVolumes()).size === 0,
    );
    expect((await stack.store.list('PersistentVolume')).items).toHaveLength(0);
    expect(stack.provisioner.inProgress.size).toBe(0);
  });

  it('with the driver socket absent, claim events say why; provisioning proceeds once it appears', async () => {
    s = await new Stack({ backend: 'sim', startDriver: false }).start();
    const stack = s;
    await stack.storageClass('sc');
    await stack.claim('c', { storageClassName: 'sc' });
    const ev = await until('failure event', async () =>
      (await stack.events('c')).find((e) => e.reason === 'ProvisioningFailed'),
    );
    expect(ev.type).toBe('Warning');
    expect(ev.message).toContain('rpc error: code = Unavailable');
    expect(ev.message).toContain(stack.socket);
    expect((await stack.getClaim('c')).status?.phase).toBe('Pending');
    await stack.startDriver();
    const c = await stack.bound('c');
    expect((await stack.driverVolumes()).size).toBe(1);
    expect((await stack.events('c')).some((e) => e.reason === 'ProvisioningSucceeded')).toBe(true);
    expect(c.spec.volumeName).toBe(`pvc-${c.metadata.uid}`);
  });

  it('ResourceExhausted on the selected node hands the claim back to the scheduler', async () => {
    // 3 GiB in all: the first 2 GiB claim fits, the second does not.
    s = await new Stack({ backend: 'sim', capacityBytes: 3 * 2 ** 30 }).start();
    const stack = s;
    await stack.storageClass('late', { volumeBindingMode: 'WaitForFirstConsumer' });
    const selected = { 'volume.kubernetes.io/selected-node': stack.nodeName };
    await stack.claim(
      'first',
      { storageClassName: 'late', resources: { requests: { storage: '2Gi' } } },
      selected,
    );
    await stack.bound('first');
    await stack.claim(
      'big',
      { storageClassName: 'late', resources: { requests: { storage: '2Gi' } } },
      selected,
    );
    await until(
      'selected node cleared',
      async () =>
        (await stack.getClaim('big')).metadata.annotations?.['volume.kubernetes.io/selected-node'] ===
        undefined,
    );
    const ev = (await stack.events('big')).find((e) => e.reason === 'ProvisioningFailed');
    expect(ev?.message).toContain('rpc error: code = ResourceExhausted');
    expect((await stack.driverVolumes()).size).toBe(1);
    expect((await stack.getClaim('big')).status?.phase).toBe('Pending');
  });

  it('refuses to provision for a claim with a selector, as upstream', async () => {
    s = await new Stack({ backend: 'sim' }).start();
    const stack = s;
    await stack.storageClass('sc');
    await stack.claim('picky', { storageClassName: 'sc', selector: { matchLabels: { disk: 'ssd' } } });
    const ev = await until('event', async () =>
      (await stack.events('picky')).find((e) => e.reason === 'ProvisioningFailed'),
    );
    expect(ev.message).toBe(
      'failed to provision volume with StorageClass "sc": claim Selector is not supported',
    );
    expect((stack.driver!.backend as SimBackend).calls.createVolume ?? 0).toBe(0);
  });

  it('rejects a class with an unknown reserved parameter with a clear event and creates nothing', async () => {
    s = await new Stack({ backend: 'sim' }).start();
    const stack = s;
    await stack.storageClass('bad', { parameters: { 'csi.storage.k8s.io/typo': 'x' } });
    await stack.claim('c', { storageClassName: 'bad' });
    const ev = await until('event', async () =>
      (await stack.events('c')).find((e) => e.reason === 'ProvisioningFailed'),
    );
    expect(ev.message).toBe(
      'failed to provision volume with StorageClass "bad": found unknown parameter key "csi.storage.k8s.io/typo" with reserved namespace csi.storage.k8s.io/',
    );
    expect((stack.driver!.backend as SimBackend).calls.createVolume ?? 0).toBe(0);
  });
});
