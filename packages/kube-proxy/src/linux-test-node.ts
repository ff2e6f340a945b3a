// A real node for the linux datapath tests (not exported from the package): a network namespace per pod
// behind a veth into the node's namespace (gateway .1 of the pod's /24), an uplink to an `out` namespace
// that is the node's default route and can reach pods through the node (a NodePort client), and on port
// 8080 of each serving pod a TCP server that answers with the pod's own address, so a client sees which
// endpoint the kernel picked. Everything it made goes with stop(). simTestNode builds the same on netsim.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { World } from '@kemu/netsim';

export class LinuxTestNode {
  /** Namespace names by role: `node`, `out`, and one per pod. */
  readonly ns: Record<string, string> = {};
  private readonly created: string[] = [];
  private readonly servers: ChildProcess[] = [];
  private n = 0;

  static async start(pods: Record<string, string>, serving: string[]): Promise<LinuxTestNode> {
    const node = new LinuxTestNode();
    try {
      await node.build(pods, serving);
    } catch (err) {
      node.stop();
      throw err;
    }
    return node;
  }

  /** Runs a command in one of the namespaces. */
  inNs(role: string, cmd: string, args: string[], input?: string) {
    return spawnSync('nsenter', [`--net=${this.path(role)}`, '--', cmd, ...args], { encoding: 'utf8', input, timeout: 60_000 });
  }

  path(role: string): string {
    return `/var/run/netns/${this.ns[role]}`;
  }

  stop(): void {
    for (const s of this.servers) s.kill();
    for (const name of this.created) spawnSync('ip', ['netns', 'del', name]);
  }

  private async build(pods: Record<string, string>, serving: string[]): Promise<void> {
    const ns = this.ns;
    ns.node = this.netns('node');
    for (const [i, [pod, addr]] of Object.entries(pods).entries()) {
      ns[pod] = this.netns(pod);
      const gw = addr.replace(/\.\d+$/, '.1');
      ip(['link', 'add', `kp${i}`, 'netns', ns.node, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns[pod]]);
      ip(['-n', ns.node, 'addr', 'add', `${gw}/24`, 'dev', `kp${i}`]);
      ip(['-n', ns.node, 'link', 'set', `kp${i}`, 'up']);
      ip(['-n', ns[pod], 'addr', 'add', `${addr}/24`, 'dev', 'eth0']);
      ip(['-n', ns[pod], 'link', 'set', 'eth0', 'up']);
      ip(['-n', ns[pod], 'link', 'set', 'lo', 'up']);
      ip(['-n', ns[pod], 'route', 'add', 'default', 'via', gw]);
    }
    const fwd = this.inNs('node', 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    if (fwd.status !== 0) throw new Error(`sysctl net.ipv4.ip_forward=1 in the node: ${fwd.stderr}`);
    // A default route out of the node, as real nodes have: a packet nothing else routes meets FORWARD.
    ns.out = this.netns('out');
    ip(['link', 'add', 'up0', 'netns', ns.node, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.out]);
    ip(['-n', ns.out, 'addr', 'add', '192.168.99.2/24', 'dev', 'eth0']);
    ip(['-n', ns.out, 'link', 'set', 'eth0', 'up']);
    ip(['-n', ns.out, 'link', 'set', 'lo', 'up']);
    ip(['-n', ns.out, 'route', 'add', '10.244.0.0/16', 'via', '192.168.99.1']);
    ip(['-n', ns.node, 'addr', 'add', '192.168.99.1/24', 'dev', 'up0']);
    ip(['-n', ns.node, 'link', 'set', 'up0', 'up']);
    ip(['-n', ns.node, 'route', 'add', 'default', 'via', '192.168.99.2']);
    for (const pod of serving) {
      const srv = spawn('nsenter', [`--net=${this.path(pod)}`, '--', process.execPath, '-e', `require('net').createServer((s) => s.end('${pods[pod]}')).listen(8080, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
      this.servers.push(srv);
      await new Promise((r) => srv.stdout!.once('data', r));
    }
  }

  private netns(tag: string): string {
    const name = `kemu-test-${process.pid}-${tag}-${this.n++}`;
    const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ip netns add ${name}: ${r.stderr}`);
    this.created.push(name);
    return name;
  }
}

function ip(args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}

/** The same node, pods and outside host on netsim (rules not yet applied), each pod listening on 8080. */
export function simTestNode(pods: Record<string, string>): World {
  const w = new World();
  w.addNamespace('node');
  w.setForwarding('node', 4, true);
  for (const [i, [pod, addr]] of Object.entries(pods).entries()) {
    const gw = addr.replace(/\.\d+$/, '.1');
    w.addNamespace(pod);
    w.addLink('node', { kind: 'veth', name: `kp${i}`, peer: { name: 'eth0', ns: pod } });
    w.addAddress('node', `kp${i}`, `${gw}/24`);
    w.setLink('node', `kp${i}`, { up: true });
    w.addAddress(pod, 'eth0', `${addr}/24`);
    w.setLink(pod, 'eth0', { up: true });
    w.setLink(pod, 'lo', { up: true });
    w.addRoute(pod, { dst: 'default', via: gw });
    w.listen(pod, { proto: 'tcp', port: 8080 });
  }
  w.addNamespace('out');
  w.setLink('out', 'lo', { up: true });
  w.addLink('node', { kind: 'veth', name: 'up0', peer: { name: 'eth0', ns: 'out' } });
  w.addAddress('out', 'eth0', '192.168.99.2/24');
  w.setLink('out', 'eth0', { up: true });
  w.addAddress('node', 'up0', '192.168.99.1/24');
  w.setLink('node', 'up0', { up: true });
  w.addRoute('node', { dst: 'default', via: '192.168.99.2' });
  w.addRoute('out', { dst: '10.244.0.0/16', via: '192.168.99.1' });
  return w;
}
