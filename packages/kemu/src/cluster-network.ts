// The cluster's pod network as the composition root sees it: one interface, a simulated (netsim) and a
// real-kernel implementation behind it, and one factory that picks between them. Callers ask what they
// need (does pod state outlive this process? which prefix do pod namespaces get?) instead of telling
// the implementations apart.
import type { Datapath } from '@kemu/cni';
import type { NetworkManager } from '@kemu/cri';
import type { RuleSink } from '@kemu/kube-proxy';
import type { FilterSink } from '@kemu/network-policy';
import type { TraceHop } from '@kemu/netsim';
import type { ClusterBgp } from './bgp-routing.js';
import { LinuxClusterNetwork } from './linux-network.js';
import { type OverlayKind, SimClusterNetwork } from './sim-network.js';

/** One node's share of the cluster network. */
export interface NodeNetwork {
  nodeName: string;
  nodeIP: string;
  podCIDR: string;
  /** The node's root namespace as its CNI chain sees it. */
  datapath: Datapath;
  /** What the node's CRI runtime sets pods' networks up with (the CNI chain). */
  manager: NetworkManager;
  /** For runtimes that leave namespace creation to the network (the sim runtime). */
  netnsHooks: {
    create(p: string): Promise<void>;
    remove(p: string): Promise<void>;
    listen?(p: string, proto: 'tcp' | 'udp', port: number): Promise<void>;
  };
  /** The node's namespace on the machine, when it has one (linux). */
  netnsPath?: string;
}

/**
 * A probe from a pod's namespace (an ICMP echo, or with a port a TCP connect): the outcome and, where the
 * datapath records one, its path.
 */
export interface ProbeResult {
  reachable: boolean;
  transmitted: number;
  received: number;
  /** Why nothing came back: the stack's refusal (code) or the last line ping printed. */
  error?: { code?: string; message: string };
  /** Hop by hop, on the simulated datapath; empty on a real kernel. */
  trace: TraceHop[];
  text: string;
}

/** A datagram's request and reply, as a connected UDP socket sees it. */
export interface UdpExchange {
  /** The reply from `to:port` (NAT on the way reversed), if one came. */
  reply?: Buffer;
  /** Why nothing came back, when the stack or an ICMP error says. */
  error?: { code?: string; message: string };
  trace: TraceHop[];
  text: string;
}

export interface ClusterNetwork {
  readonly overlay: OverlayKind;
  /** With the bgp overlay: the nodes' speakers, which program the routes between nodes. */
  readonly bgp?: ClusterBgp;
  readonly nodes: ReadonlyMap<string, NodeNetwork>;
  /**
   * Pods' namespaces and interfaces are the machine's: they outlive this process, so a cluster whose store
   * forgets it must tear its pods down, and node processes on this machine share one datapath.
   */
  readonly onMachine: boolean;
  /** The prefix of the namespaces a process runtime creates for pods. */
  readonly podNetnsPrefix: string;
  /** Only nodes in this process are reachable by a probe (one simulated world per process). */
  readonly probesNeedLocalNodes: boolean;
  addNode(nodeName: string, nodeIP: string, podCIDR: string): Promise<NodeNetwork>;
  /** Addresses the node's IPAM holds. */
  allocatedIps(nodeName: string): Promise<number>;
  /**
   * One ICMP echo (or, with `port`, a TCP connect) from the pod namespace `netns` (as the runtime's
   * PodSandboxStatus reports it) to the address `to`.
   */
  probe(netns: string, to: string, port?: number): Promise<ProbeResult>;
  /** Where kube-proxy writes the node's rules: its netfilter, simulated or real. */
  ruleSink(nodeName: string): RuleSink;
  /** The node's ip6tables filter table (save and --noflush restore), where IPv6 policy rules go. */
  ip6FilterSink?(nodeName: string): FilterSink;
  /**
   * A server socket on the node's address: each UDP datagram to `port` answered with what `answer` returns
   * (with `tcp`, the TCP port accepts too, where the network can). The result stops serving.
   */
  serveUdp?(nodeName: string, port: number, answer: (payload: Buffer) => Uint8Array | undefined, o?: { tcp?: boolean }): Promise<() => Promise<void>>;
  /** One datagram from the pod namespace `netns` to `to:port` and the reply its socket took, with the path. */
  exchangeUdp?(netns: string, to: string, port: number, payload: Uint8Array): Promise<UdpExchange>;
  /** Keeps what a restart needs (the simulated world, when persistent). */
  save(): void;
  /** Removes what this cluster made on the machine (namespaces); nothing for a simulated network. */
  destroy(): Promise<void>;
}

export interface ClusterNetworkOptions {
  datapath: 'sim' | 'linux';
  stateDir: string;
  overlay?: OverlayKind;
  bgp?: ClusterBgp;
  /** Simulated only: load and save the world under stateDir (durable stores). */
  persist?: boolean;
  /** Simulated only: the cluster's pod network, which nodes route to the underlay router. */
  podNetwork?: string;
  /** Simulated only: route through an underlay router instead of host-gw routes between all nodes. */
  routedUnderlay?: boolean;
  /** Simulated only: the underlay router's address. */
  underlayGateway?: string;
  /** Simulated only: the Services' cluster IP range, which nodes route towards the underlay (default 10.96.0.0/12). */
  serviceNetwork?: string;
}

export function createClusterNetwork(o: ClusterNetworkOptions): ClusterNetwork {
  return o.datapath === 'linux' ? new LinuxClusterNetwork(o) : new SimClusterNetwork(o);
}
