// `--network bgp`: pods sit on a bridge per node as with host-gw, but no one programs the routes between
// nodes by hand. Each node runs a BGP speaker (@kemu/bgp) that announces the node's pod CIDR, learns the
// others' and installs them into the node's namespace as `<cidr> via <node IP> proto bgp` (the kube-router
// layout; calico's differs in pod plumbing, not in how routes travel). The speakers of one cluster live in
// the kemu process and talk real BGP to each other over an in-memory transport; full mesh for small
// clusters, two route reflectors beyond.
import type { Datapath } from '@kemu/cni';
import { DatapathRouteSink, RouteSimulation } from '@kemu/bgp';

/** Nodes up to which every speaker peers with every other; beyond, two reflectors carry the routes. */
export const FULL_MESH_MAX = 50;
/** Every node holds a route per other node (nodes² in all); past this the simulated routes take too much memory. */
export const BGP_MAX_NODES = 1000;

export class ClusterBgp {
  private readonly sim: RouteSimulation;

  constructor(expectedNodes: number) {
    this.sim = new RouteSimulation({
      topology: expectedNodes > FULL_MESH_MAX ? { kind: 'route-reflectors', count: 2 } : { kind: 'full-mesh' },
      transport: 'memory',
      connectRetryTime: 1,
    });
  }

  private started = false;

  /**
   * The node's speaker: it announces `podCIDR` and programs what it learns into `datapath`. Speakers added
   * before {@link start} wait for it, so a booting cluster converges once instead of after every join.
   */
  async addNode(name: string, nodeIP: string, podCIDR: string, datapath: Datapath): Promise<void> {
    await this.sim.addNode(name, nodeIP, [podCIDR], { sink: new DatapathRouteSink(datapath), start: this.started });
  }

  /** Starts every speaker added so far and resolves once each has a route to every other node's pod CIDR. */
  async start(timeoutMs = 60_000): Promise<number> {
    this.started = true;
    await this.sim.startAll();
    return this.sim.waitConverged(timeoutMs);
  }

  /** Per node: its role, established sessions and learned routes (for `kemu` to show). */
  status(): { node: string; role: string; established: number; routes: number }[] {
    return [...this.sim.nodes.values()].map((n) => ({
      node: n.name,
      role: n.role,
      established: n.speaker.peers().filter((p) => p.state === 'Established').length,
      routes: n.sink.routes.size,
    }));
  }

  async close(): Promise<void> {
    await this.sim.destroy();
  }
}
