// One CSI controller endpoint in front of node-local drivers (each emulated node runs its own kemu-csi,
// whose volumes live on that node, like csi-driver-host-path). CreateVolume goes to the node the
// accessibility requirements prefer; calls about a volume go to the node that holds it; publish calls go
// to the node named by node_id. The sidecars see an ordinary driver.
import { grpc, InProcessCallError, type csi, type PromiseApi } from '@kemu/proto';
import type { CsiConnection } from '@kemu/csi-sidecars';

type Controller = PromiseApi<csi.ControllerMethods>;

export interface NodeDriver {
  node: string;
  controller: Controller;
  identity: PromiseApi<csi.IdentityMethods>;
  nodeService: PromiseApi<csi.NodeMethods>;
}

function notFound(what: string): never {
  throw new InProcessCallError(grpc.status.NOT_FOUND, what, 'route');
}

export class CsiRouter implements CsiConnection {
  readonly address = 'in-process (routed to node-local drivers)';
  readonly identity: PromiseApi<csi.IdentityMethods>;
  readonly controller: Controller;
  readonly node: PromiseApi<csi.NodeMethods>;
  private readonly volumes = new Map<string, string>();
  private readonly snapshots = new Map<string, string>();
  private next = 0;

  constructor(
    private readonly drivers: Map<string, NodeDriver>,
    private readonly topologyKey: string,
  ) {
    const first = () => {
      const d = drivers.values().next().value;
      if (!d)
        throw new InProcessCallError(
          grpc.status.UNAVAILABLE,
          'no CSI driver is running on any node',
          'route',
        );
      return d;
    };
    this.identity = new Proxy({} as PromiseApi<csi.IdentityMethods>, {
      get: (_t, rpc: string) => (req: object) =>
        (first().identity as Record<string, (r: object) => Promise<unknown>>)[rpc](req),
    });
    this.node = new Proxy({} as PromiseApi<csi.NodeMethods>, {
      get: () => () =>
        Promise.reject(
          new InProcessCallError(grpc.status.UNIMPLEMENTED, 'node RPCs go to each node plugin', 'route'),
        ),
    });
    const byVolume = async (id: string | undefined): Promise<NodeDriver> => {
      const v = id ?? '';
      const known = this.volumes.get(v);
      if (known && this.drivers.has(known)) return this.drivers.get(known)!;
      await this.rescan();
      const again = this.volumes.get(v);
      return again ? this.drivers.get(again)! : notFound(`volume ${v} not found`);
    };
    const byNode = (id: string | undefined) =>
      this.drivers.get(id ?? '') ?? notFound(`node ${id} has no CSI driver`);
    this.controller = {
      CreateVolume: async (req) => {
        const d = this.pickNode(req.accessibilityRequirements);
        const res = await d.controller.CreateVolume(req);
        if (res.volume?.volumeId) this.volumes.set(res.volume.volumeId, d.node);
        return res;
      },
      DeleteVolume: async (req) => {
        let d: NodeDriver;
        try {
          d = await byVolume(req.volumeId);
        } catch {
          return {}; // deleting an unknown volume succeeds, as the spec requires
        }
        const res = await d.controller.DeleteVolume(req);
        this.volumes.delete(req.volumeId ?? '');
        return res;
      },
      ControllerPublishVolume: async (req) =>
        (await byVolume(req.volumeId)) && byNode(req.nodeId).controller.ControllerPublishVolume(req),
      ControllerUnpublishVolume: async (req) => {
        if (req.nodeId) return byNode(req.nodeId).controller.ControllerUnpublishVolume(req);
        return (await byVolume(req.volumeId)).controller.ControllerUnpublishVolume(req);
      },
      ValidateVolumeCapabilities: async (req) =>
        (await byVolume(req.volumeId)).controller.ValidateVolumeCapabilities(req),
      ListVolumes: async (req) => {
        const entries: csi.ListVolumesResponse_Entry[] = [];
        for (const d of this.drivers.values())
          entries.push(...((await d.controller.ListVolumes({})).entries ?? []));
        const start = req.startingToken ? Number(req.startingToken) : 0;
        if (!Number.isInteger(start) || start < 0 || start > entries.length) {
          throw new InProcessCallError(
            grpc.status.ABORTED,
            `invalid starting_token ${req.startingToken}`,
            'ListVolumes',
          );
        }
        const end = req.maxEntries ? start + req.maxEntries : entries.length;
        return { entries: entries.slice(start, end), nextToken: end < entries.length ? String(end) : '' };
      },
      GetCapacity: async (req) => {
        const seg = req.accessibleTopology?.segments?.[this.topologyKey];
        if (seg) return byNode(seg).controller.GetCapacity(req);
        let total = 0;
        for (const d of this.drivers.values())
          total += (await d.controller.GetCapacity(req)).availableCapacity ?? 0;
        return { availableCapacity: total };
      },
      ControllerGetCapabilities: async (req) => first().controller.ControllerGetCapabilities(req),
      CreateSnapshot: async (req) => {
        const d = await byVolume(req.sourceVolumeId);
        const res = await d.controller.CreateSnapshot(req);
        if (res.snapshot?.snapshotId) this.snapshots.set(res.snapshot.snapshotId, d.node);
        return res;
      },
      DeleteSnapshot: async (req) => {
        const n = this.snapshots.get(req.snapshotId ?? '');
        if (!n) return {};
        this.snapshots.delete(req.snapshotId ?? '');
        return byNode(n).controller.DeleteSnapshot(req);
      },
      ListSnapshots: async (req) => {
        const entries: csi.ListSnapshotsResponse_Entry[] = [];
        for (const d of this.drivers.values())
          entries.push(
            ...((await d.controller.ListSnapshots({ ...req, maxEntries: 0, startingToken: '' })).entries ??
              []),
          );
        return { entries, nextToken: '' };
      },
      GetSnapshot: async (req) =>
        byNode(this.snapshots.get(req.snapshotId ?? '') ?? '').controller.GetSnapshot(req),
      ControllerExpandVolume: async (req) =>
        (await byVolume(req.volumeId)).controller.ControllerExpandVolume(req),
      ControllerGetVolume: async (req) => (await byVolume(req.volumeId)).controller.ControllerGetVolume(req),
      ControllerModifyVolume: async (req) =>
        (await byVolume(req.volumeId)).controller.ControllerModifyVolume(req),
    };
  }

  /** Learns which node holds which volume (after a restart of the composer, say). */
  async rescan(): Promise<void> {
    for (const d of this.drivers.values()) {
      const list = await d.controller.ListVolumes({});
      for (const e of list.entries ?? []) if (e.volume?.volumeId) this.volumes.set(e.volume.volumeId, d.node);
    }
  }

  private pickNode(req: csi.TopologyRequirement | null | undefined): NodeDriver {
    for (const t of [...(req?.preferred ?? []), ...(req?.requisite ?? [])]) {
      const n = t.segments?.[this.topologyKey];
      if (n && this.drivers.has(n)) return this.drivers.get(n)!;
    }
    const all = [...this.drivers.values()];
    if (!all.length)
      throw new InProcessCallError(grpc.status.UNAVAILABLE, 'no CSI driver is running on any node', 'route');
    return all[this.next++ % all.length];
  }

  close(): void {}
}
