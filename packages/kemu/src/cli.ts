#!/usr/bin/env node
// kemu: compose an emulated Kubernetes cluster and use it like kubectl.
import { isStatusError, type Taint } from '@kemu/core';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ClusterUnreachableError } from './api-client.js';
import * as cmd from './commands.js';
import { top } from './top.js';
import { type DeviceRequest, kubeletConfigFor, parseDeviceRequest, parseKubeletConfigFlags } from './node-resources.js';
import { registerRolloutCommands } from './rollout-cli.js';
import { nodeAdd, nodeRemove } from './node-add.js';
import { parseNodeLabels, parseTaint, parseTaintList } from './node-registration.js';
import { runDemo } from './demo.js';
import { defaultStateDir } from './state.js';
import { clusterV8Flags, runWithV8Flags, untilStopSignal } from './v8-flags.js';

const VERSION = '0.1.0';

function int(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number`);
    return n;
  };
}

/**
 * A repeatable option's parser: each value goes through `parse` and is merged into what came before; a
 * value `parse` refuses becomes commander's one-line usage error rather than a stack trace.
 */
function repeatable<T, A>(parse: (v: string) => T, merge: (prev: A, next: T) => A, initial: A) {
  return (v: string, prev: A | undefined) => {
    try {
      return merge(prev ?? initial, parse(v));
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

const program = new Command('kemu')
  .description('Kubernetes node-interface emulators composed into a cluster you can run on one machine')
  .version(VERSION)
  .showHelpAfterError('(run with --help for usage)')
  // `kemu node --name X` and `kemu node add --name Y`: options after a subcommand are the subcommand's.
  .enablePositionalOptions();

const stateDirOpt = () => new Option('--state-dir <dir>', 'where the cluster keeps its socket and state').default(defaultStateDir(), '$KEMU_STATE_DIR or ~/.kemu');
const nsOpt = () => new Option('-n, --namespace <ns>', 'namespace').default('default');
const kubeletConfigOpt = (help: string) =>
  new Option('--kubelet-config <[node=]file>', help).default([] as string[]).argParser((v: string, prev: string[]) => [...prev, v]);
const deviceOpt = () =>
  new Option('--device <resource=count[:model]>', 'simulated devices on each node, served by a device plugin beside its kubelet, e.g. nvidia.com/gpu=8; repeatable')
    .default([] as DeviceRequest[])
    .argParser(repeatable(parseDeviceRequest, (prev: DeviceRequest[], d) => [...prev, d], []));
const kubeletConfigs = (values: string[]) => (values.length ? parseKubeletConfigFlags(values) : undefined);

program
  .command('up')
  .description('start a cluster (foreground until Ctrl-C, or --detach)')
  .addOption(new Option('--nodes <n>', 'number of nodes').default(3).argParser(int('--nodes')))
  .addOption(new Option('--datapath <kind>', 'pod networking datapath (linux: real network namespaces, needs root)').choices(['sim', 'linux']).default('sim'))
  .addOption(new Option('--network <kind>', 'cross-node networking: host-gw routes, a VXLAN overlay, or routes learned over BGP').choices(['bridge', 'vxlan', 'bgp']).default('bridge'))
  .addOption(new Option('--proxy-mode <mode>', "kube-proxy's mode on every node: iptables chains or nftables verdict maps").choices(['iptables', 'nftables']).default('iptables'))
  .addOption(new Option('--storage <kind>', 'CSI driver backend (default: sim; hostpath with --runtime process or runc)').choices(['sim', 'hostpath']))
  .addOption(new Option('--runtime <kind>', 'CRI runtime backend (runc: real OCI images from registries)').choices(['sim', 'process', 'runc']).default('sim'))
  .addOption(new Option('--store <kind>', 'object store').choices(['memory', 'file', 'etcd']).default('memory'))
  .option('--etcd-endpoints <urls>', 'comma-separated etcd client URLs (with --store etcd)')
  .option('-d, --detach', 'run in the background and return once the cluster is ready')
  .option('--node-processes', 'run each node (kubelet, runtime, CSI driver) in a process of its own')
  .option('--fast', 'shorter heartbeat, relist and back-off periods (for tests and demos)')
  .option('--name <name>', 'cluster name: kubeconfig entries are kemu-<name>', 'kemu')
  .addOption(new Option('--api-port <port>', 'HTTPS port of the API server (default: any free port)').argParser(int('--api-port')))
  .option('--api-address <addr>', 'address the API server listens on', '127.0.0.1')
  .addOption(new Option('--dns-port <port>', 'UDP and TCP port of the cluster DNS server on 127.0.0.1 (default: any free port)').argParser(int('--dns-port')))
  .option('--merge-kubeconfig [file]', 'merge the admin kubeconfig into this file ($KUBECONFIG or ~/.kube/config) as context kemu-<name>')
  .addOption(new Option('--auth <mode>', 'rbac: certificates, tokens, RBAC and admission as kube-apiserver; none: allow every request').choices(['rbac', 'none']).default('rbac'))
  .option('--audit-log-path <file>', 'write an audit log (audit.k8s.io/v1 Events, JSON lines) here')
  .option('--audit-policy-file <file>', 'the audit.k8s.io/v1 Policy for --audit-log-path')
  .option('--controllers <list>', 'workload controllers to run, as kube-controller-manager: * (all), names, -name to disable', '*')
  .addOption(new Option('--clock-speed <n>', 'run the cluster clock n times faster than real time (CronJobs, TTLs)').default(1).argParser(int('--clock-speed')))
  .addOption(kubeletConfigOpt('KubeletConfiguration file (kubelet.config.k8s.io/v1beta1) for every node, or NODE=FILE for one node; repeatable'))
  .addOption(deviceOpt())
  .addOption(stateDirOpt())
  .action(async (o) => {
    // The cluster process needs V8 flags that only take effect at startup (v8-flags.ts).
    const flags = o.detach ? [] : clusterV8Flags();
    if (flags.length) {
      process.exitCode = await runWithV8Flags(flags);
      return;
    }
    const handle = await cmd.up({
      kubeletConfigs: kubeletConfigs(o.kubeletConfig),
      devices: o.device,
      controllers: o.controllers,
      clockSpeed: o.clockSpeed,
      name: o.name,
      apiPort: o.apiPort,
      apiAddress: o.apiAddress,
      dnsPort: o.dnsPort,
      mergeKubeconfig: o.mergeKubeconfig,
      auth: o.auth,
      auditLogPath: o.auditLogPath,
      auditPolicyFile: o.auditPolicyFile,
      nodeProcesses: o.nodeProcesses,
      fast: o.fast,
      nodes: o.nodes,
      datapath: o.datapath,
      proxyMode: o.proxyMode,
      network: o.network,
      storage: o.storage,
      runtime: o.runtime,
      store: o.store,
      etcdEndpoints: o.etcdEndpoints ? String(o.etcdEndpoints).split(',') : undefined,
      stateDir: o.stateDir,
      detach: o.detach,
    });
    if (!handle) return;
    await untilStopSignal(() => {
      process.stderr.write('stopping the cluster...\n');
      return handle.stop();
    });
  });

const nodeCommand = program
  .command('node')
  .description('run one node (kubelet, CRI runtime, CSI driver) that joins a running cluster; or add/remove nodes of a running `kemu up`')
  .enablePositionalOptions()
  // Required when running a node; plain options so that `kemu node add` does not need them.
  .option('--name <name>', 'node name (required)')
  .option('--node-ip <ip>', "the node's address on the cluster network (required)")
  .option('--pod-cidr <cidr>', "the node's pod CIDR, e.g. 10.244.5.0/24 (required)")
  .addOption(new Option('--datapath <kind>', 'pod networking datapath').choices(['sim', 'linux']).default('sim'))
  .addOption(new Option('--network <kind>', 'cross-node networking').choices(['bridge', 'vxlan']).default('bridge'))
  .option('--pod-network <cidr>', "the cluster's pod network the vxlan overlay routes", '10.244.0.0/16')
  .addOption(new Option('--runtime <kind>', 'CRI runtime backend (runc: real OCI images from registries)').choices(['sim', 'process', 'runc']).default('sim'))
  .addOption(new Option('--storage <kind>', 'CSI driver backend (default: sim; hostpath with --runtime process or runc)').choices(['sim', 'hostpath']))
  .option('--api-socket <path>', "the cluster's API socket (default: <state-dir>/kemu.sock)")
  .option('--etcd-endpoints <urls>', 'talk to etcd directly instead of the API socket (a node on another machine)')
  .option('--durable', 'the cluster store outlives its processes (file or etcd): keep runtime state on disk')
  .option('--fast', 'shorter heartbeat, relist and back-off periods (for tests and demos)')
  .addOption(kubeletConfigOpt('KubeletConfiguration file (kubelet.config.k8s.io/v1beta1) for this node'))
  .addOption(deviceOpt())
  .addOption(
    new Option('--register-with-taints <taints>', 'taints the node registers with, as the kubelet flag: key=value:Effect,...')
      .default([] as Taint[])
      .argParser(repeatable(parseTaintList, (prev: Taint[], t) => [...prev, ...t], [])),
  )
  .addOption(
    new Option('--node-labels <labels>', 'labels the node registers with, as the kubelet flag: key=value,...').argParser(repeatable(parseNodeLabels, (prev: Record<string, string>, l) => ({ ...prev, ...l }), {})),
  )
  .addOption(stateDirOpt())
  .action(async (o) => {
    for (const [flag, v] of [['--name <name>', o.name], ['--node-ip <ip>', o.nodeIp], ['--pod-cidr <cidr>', o.podCidr]])
      if (v === undefined) throw new cmd.UsageError(`required option '${flag}' not specified`);
    const handle = await cmd.node({
      name: o.name,
      ip: o.nodeIp,
      podCIDR: o.podCidr,
      datapath: o.datapath,
      network: o.network,
      podNetwork: o.podNetwork,
      runtime: o.runtime,
      storage: o.storage,
      apiSocket: o.apiSocket,
      etcdEndpoints: o.etcdEndpoints ? String(o.etcdEndpoints).split(',') : undefined,
      durable: !!o.durable || !!o.etcdEndpoints,
      fast: !!o.fast,
      kubeletConfig: kubeletConfigFor(kubeletConfigs(o.kubeletConfig), o.name),
      devices: o.device,
      taints: o.registerWithTaints.length ? o.registerWithTaints : undefined,
      labels: o.nodeLabels,
      stateDir: o.stateDir,
    });
    await new Promise<void>((resolve) => {
      const bye = () => handle.stop().then(resolve, resolve);
      process.once('SIGINT', bye);
      process.once('SIGTERM', bye);
    });
  });

nodeCommand
  .command('add')
  .description('add nodes to the cluster started by `kemu up` while it runs (each registers before this returns)')
  .addOption(new Option('--count <n>', 'how many nodes').default(1).argParser(int('--count')))
  .option('--name <name>', 'the node\'s name (one node; default kemu-node-<n>)')
  .addOption(
    new Option('--taint <key=value:Effect>', 'a taint the node registers with, as kubectl taint writes it; repeatable')
      .default([] as Taint[])
      .argParser(repeatable(parseTaint, (prev: Taint[], t) => [...prev, t], [])),
  )
  .addOption(
    new Option('--label <key=value>', 'a label the node registers with, as the kubelet\'s --node-labels; repeatable').argParser(repeatable(parseNodeLabels, (prev: Record<string, string>, l) => ({ ...prev, ...l }), {})),
  )
  .addOption(stateDirOpt())
  .action(async (o) => {
    if (o.count < 1) throw new cmd.UsageError('--count must be at least 1');
    await nodeAdd({ count: o.count, name: o.name, taints: o.taint, labels: o.label, stateDir: o.stateDir }, cmd.stdio);
  });

nodeCommand
  .command('remove')
  .description('remove a node of the cluster started by `kemu up`: its agents stop, its Node and its pods go')
  .argument('<name>')
  .addOption(stateDirOpt())
  .action(async (name, o) => nodeRemove(name, { stateDir: o.stateDir }, cmd.stdio));

program
  .command('kubeconfig')
  .description("print the running cluster's admin kubeconfig (kubectl --kubeconfig <(kemu kubeconfig) ...), or another user's")
  .option('--user <name>', 'a kubeconfig for this user instead: a client certificate signed by the cluster CA (CN = name)')
  .option('--group <group>', 'a group of --user (O of the certificate); repeatable', (v: string, prev: string[]) => [...prev, v], [] as string[])
  .addOption(stateDirOpt())
  .action(async (o) => {
    if (o.group.length && o.user === undefined) throw new cmd.UsageError('--group needs --user');
    await cmd.kubeconfig(o.stateDir, cmd.stdio, { user: o.user, groups: o.group });
  });

program
  .command('down')
  .description('stop the cluster started by `kemu up`')
  .addOption(stateDirOpt())
  .action(async (o) => cmd.down(o.stateDir));

program
  .command('apply')
  .description('create or update objects from a manifest file (multi-document YAML or JSON)')
  .requiredOption('-f, --filename <file>', 'manifest file, or - for stdin')
  .addOption(nsOpt())
  .addOption(stateDirOpt())
  .action(async (o) => {
    process.exitCode = await cmd.apply(o.filename, { namespace: o.namespace, stateDir: o.stateDir });
  });

program
  .command('get')
  .description('list objects, or show one, formatted like kubectl')
  .argument('<kind>', 'pods, nodes, pvc, pv, sc, volumeattachments, events, ...')
  .argument('[name]')
  .addOption(new Option('-o, --output <format>', 'output format').choices(['wide', 'yaml', 'json']))
  .addOption(nsOpt())
  .option('-A, --all-namespaces', 'across all namespaces')
  .option('-l, --selector <selector>', 'label selector, e.g. app=web')
  .addOption(stateDirOpt())
  .action(async (kind, name, o) =>
    cmd.get(kind, name, { output: o.output, namespace: o.namespace, allNamespaces: o.allNamespaces, selector: o.selector, stateDir: o.stateDir }),
  );

program
  .command('describe')
  .description('show an object in detail, with its events')
  .argument('<kind>')
  .argument('<name>')
  .addOption(nsOpt())
  .addOption(stateDirOpt())
  .action(async (kind, name, o) => cmd.describe(kind, name, { namespace: o.namespace, stateDir: o.stateDir }));

program
  .command('delete')
  .description('delete objects by kind and name, or those in a manifest file')
  .argument('[kind]')
  .argument('[name]')
  .option('-f, --filename <file>', 'manifest file')
  .addOption(new Option('--grace-period <seconds>', 'seconds pods get to stop').argParser(int('--grace-period')))
  .addOption(nsOpt())
  .addOption(stateDirOpt())
  .action(async (kind, name, o) => cmd.del(kind, name, { file: o.filename, namespace: o.namespace, stateDir: o.stateDir, gracePeriod: o.gracePeriod }));

program
  .command('logs')
  .description("print a container's logs")
  .argument('<pod>')
  .option('-c, --container <name>', 'container (default: the first)')
  .addOption(new Option('--tail <lines>', 'last lines only').argParser(int('--tail')))
  .addOption(nsOpt())
  .addOption(stateDirOpt())
  .action(async (pod, o) => cmd.logs(pod, { container: o.container, namespace: o.namespace, tail: o.tail, stateDir: o.stateDir }));

program
  .command('exec')
  .description('run a command in a container: kemu exec POD -- CMD [ARGS...]')
  .argument('<pod>')
  .argument('[command...]')
  .option('-c, --container <name>', 'container (default: the first)')
  .addOption(nsOpt())
  .addOption(stateDirOpt())
  .action(async (pod, command, o) => {
    process.exitCode = await cmd.exec(pod, command, { container: o.container, namespace: o.namespace, stateDir: o.stateDir });
  });

program
  .command('trace')
  .description('send a packet from a pod (an ICMP echo, or with a port a TCP SYN) and show every hop and rule; exits 1 when it is dropped or unreachable')
  .argument('<from>', 'pod name (or namespace/name)')
  .argument('<to>', 'pod name (or namespace/name), svc/NAME[:PORT], IP or IP:PORT')
  .addOption(new Option('-o, --output <format>').choices(['text', 'json']).default('text'))
  .addOption(nsOpt())
  .addOption(stateDirOpt())
  .action(async (from, to, o) => {
    process.exitCode = await cmd.trace(from, to, { namespace: o.namespace, stateDir: o.stateDir, output: o.output });
  });

program
  .command('policy')
  .description('NetworkPolicy tools')
  .command('matrix')
  .description('the reachability truth table between the running pods of a namespace, from real (simulated) packets')
  .addOption(new Option('--port <port>', 'send TCP SYNs to this port (default: ICMP echo)').argParser(int('--port')))
  .option('--expect', 'also evaluate every cell from the policies and mark (and fail on) any disagreement')
  .addOption(nsOpt())
  .addOption(stateDirOpt())
  .action(async (o) => {
    process.exitCode = await cmd.policyMatrix({ namespace: o.namespace, port: o.port, expect: o.expect, stateDir: o.stateDir });
  });

program
  .command('bench')
  .description('run a benchmark workload on an in-process cluster (see tools/bench/cluster)')
  .argument('<workload>', 'pods')
  .addOption(new Option('--nodes <n>').default(100).argParser(int('--nodes')))
  .addOption(new Option('--pods <n>').default(10_000).argParser(int('--pods')))
  .addOption(new Option('--qps <n>', 'pod creations per second (0: all at once)').default(0).argParser(int('--qps')))
  .addOption(new Option('--network <kind>', 'cross-node networking, as for `kemu up`').choices(['bridge', 'vxlan', 'bgp']).default('bridge'))
  .action(async (workload, o) => {
    const { runBench } = await import('./bench.js');
    await runBench(workload, { nodes: o.nodes, pods: o.pods, qps: o.qps, network: o.network }, cmd.stdio);
  });

program
  .command('demo')
  .description('start a 3-node cluster, run the sample app, trace a packet across nodes, clean up')
  .addOption(new Option('--nodes <n>').default(3).argParser(int('--nodes')))
  .option('--keep', 'leave the app running at the end (and stop the cluster)')
  .action(async (o) => runDemo(cmd.stdio, { nodes: o.nodes, keep: o.keep }));

registerRolloutCommands(program, nsOpt, stateDirOpt);

program
  .command('top')
  .description('CPU and memory use of nodes or pods, read from each kubelet as metrics-server reads it')
  .argument('<kind>', 'nodes or pods')
  .addOption(nsOpt())
  .option('-A, --all-namespaces', 'pods of every namespace')
  .option('--containers', 'one line per container')
  .addOption(stateDirOpt())
  .action(async (kind, o) => top(kind, { stateDir: o.stateDir, namespace: o.namespace, allNamespaces: o.allNamespaces, containers: o.containers }));

function message(err: unknown): string {
  if (err instanceof ClusterUnreachableError || err instanceof cmd.UsageError) return err.message;
  if (isStatusError(err)) return `Error from server (${err.reason}): ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

program.parseAsync(process.argv).catch((err) => {
  process.stderr.write(`error: ${message(err)}\n`);
  process.exitCode = 1;
});
