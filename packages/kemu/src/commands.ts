// What each `kemu` subcommand does. The CLI wiring (flags, help, exit codes) is in cli.ts.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { isAlreadyExists, isNotFound, isStatusError, type KubeObject, kindInfo, parseManifests, parseManifestsEach, type NetworkPolicy, type Pod, type Store, toYaml } from '@kemu/core';
import { allowed } from '@kemu/network-policy';
import cliProgress from 'cli-progress';
import {
  clusterCredentials,
  type ClusterAuth,
  controllerServiceAccountNames,
  contextName,
  decodeObjectBytes,
  defaultKubeconfigPath,
  KUBE_CONTROLLER_MANAGER,
  deferredClusterAuth,
  loadAuditPolicy,
  ServiceAccountKeys,
  startClusterAuth,
  userKubeconfig,
  type Kubeconfig,
  type UserInfo,
  mergeKubeconfig,
  removeFromKubeconfig,
  writeKubeconfigFile,
} from '@kemu/apiserver';
import { enabledControllers } from '@kemu/controllers';
import { ApiClient, ClusterUnreachableError } from './api-client.js';
import { Cluster, type ClusterOptions } from './cluster.js';
import { ensureAddonIdentities } from './component-identities.js';
import { linuxUnsupportedReason } from './linux-network.js';
import { isRealRuntime } from './node.js';
import { nodeStores, type RunNodeOptions, runNode } from './node-process.js';
import { describeObject } from './describe.js';
import { printTable, resolveKind } from './printers.js';
import { defaultStateDir, paths } from './state.js';
import { clusterV8Flags } from './v8-flags.js';

export class UsageError extends Error {}

export interface Out {
  log(line: string): void;
  err(line: string): void;
}

export const stdio: Out = {
  log: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
};

export function client(stateDir?: string): ApiClient {
  return new ApiClient(paths(stateDir ?? defaultStateDir()).socket);
}

function progressReporter(out: Out, label: string) {
  if (!process.stderr.isTTY) {
    let last = -1;
    return {
      update: (step: string, done: number, total: number) => {
        const pct = Math.floor((done / total) * 10);
        if (pct !== last || done === total) out.err(`${label}: ${step} ${done}/${total}`);
        last = pct;
      },
      stop() {},
    };
  }
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total} {step}`, stream: process.stderr, hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update: (step: string, done: number, total: number) => {
      if (!started) {
        bar.start(total, 0, { step });
        started = true;
      }
      bar.update(done, { step });
    },
    stop: () => started && bar.stop(),
  };
}

/** `kemu up`: runs the cluster and its API in this process until SIGINT/SIGTERM. */
export interface ApiOptions {
  /** The cluster's name: its kubeconfig entries are `kemu-<name>` (default `kemu`). */
  name?: string;
  /** HTTPS port of the API server (default: any free port). */
  apiPort?: number;
  /** Address it listens on (default 127.0.0.1). */
  apiAddress?: string;
  /** Merge the admin kubeconfig into this kubeconfig file (kubectl's default when true). */
  mergeKubeconfig?: string | boolean;
  /**
   * `rbac` (default): client certificates, tokens, RBAC and the admission plugins, as kube-apiserver;
   * `none`: every request allowed, for quick local use.
   */
  auth?: 'rbac' | 'none';
  /** Write an audit log (audit.k8s.io/v1 Events, one JSON object a line) here; needs auditPolicyFile. */
  auditLogPath?: string;
  /** The audit.k8s.io/v1 Policy that says which requests the audit log keeps, and at what level. */
  auditPolicyFile?: string;
}

export async function up(opts: ClusterOptions & ApiOptions & { detach?: boolean }, out: Out = stdio): Promise<{ stop(): Promise<void> } | undefined> {
  const p = paths(opts.stateDir);
  fs.mkdirSync(opts.stateDir, { recursive: true, mode: 0o700 });
  const running = await client(opts.stateDir)
    .info()
    .then(() => true)
    .catch(() => false);
  if (running) throw new UsageError(`a cluster is already running with state dir ${opts.stateDir}: stop it with \`kemu down\` first`);
  if (opts.detach) return detach(opts, out);

  const name = opts.name ?? 'kemu';
  const creds = await clusterCredentials(opts.stateDir, { name, host: opts.apiAddress });
  if (opts.auth !== undefined && opts.auth !== 'rbac' && opts.auth !== 'none') throw new UsageError(`--auth must be rbac or none, not "${opts.auth}"`);
  if (Boolean(opts.auditLogPath) !== Boolean(opts.auditPolicyFile)) throw new UsageError('--audit-log-path and --audit-policy-file go together');
  if (opts.auditPolicyFile && opts.auth === 'none') throw new UsageError('an audit log needs --auth rbac');
  if (opts.auditPolicyFile) {
    try {
      loadAuditPolicy(opts.auditPolicyFile);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const deferred = opts.auth === 'none' ? undefined : deferredClusterAuth();
  const progress = progressReporter(out, 'starting nodes');
  let auth: ClusterAuth | undefined;
  // The auth stack starts on the open store before any component, so the scheduler, kubelets and
  // kube-proxy reach the store as their upstream users, authorized as the API would authorize them.
  const componentStores = async (store: Store) => {
    auth = await startClusterAuth({
      store,
      caCertPem: creds.ca.certPem,
      serviceAccountKeys: await ServiceAccountKeys.loadOrCreate(path.join(opts.stateDir, 'pki')),
      ...(opts.auditLogPath && opts.auditPolicyFile ? { audit: { path: opts.auditLogPath, policyFile: opts.auditPolicyFile } } : {}),
      // The controller manager's resourcequota controller keeps quota status; the API server's stays off.
      quotaStatusController: !enabledControllers(opts.controllers).has('resourcequota'),
      onError: (err) => fs.appendFileSync(p.log, `${new Date().toISOString()} auth: ${(err as Error)?.message ?? err}\n`),
    });
    deferred!.resolve(auth);
    // kube-controller-manager makes the ServiceAccount each controller runs as, under its own identity.
    const manager = auth.storeFor(KUBE_CONTROLLER_MANAGER);
    for (const name of controllerServiceAccountNames()) {
      await manager.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: 'kube-system' } }).catch((err) => {
        if (!isAlreadyExists(err)) throw err;
      });
    }
    // The add-ons' ServiceAccounts and roles, as their manifests would be applied (CSI sidecars, DNS, policy).
    await ensureAddonIdentities(store);
    return (user: UserInfo) => auth!.storeFor(user);
  };
  const cluster = await Cluster.start({
    ...opts,
    ...(deferred ? { componentStores } : {}),
    apiSocket: p.socket,
    // Protobuf request bodies: kubectl sends them for built-in kinds (create role, auth can-i, create token).
    serviceAccountTokens: deferred ? async (pod, audience, seconds) => (await deferred.auth()).podToken(pod, audience, seconds) : undefined,
    apiServer: { ...(deferred?.seams ?? {}), renderers: { protobufDecode: decodeObjectBytes }, tcp: { host: opts.apiAddress ?? '127.0.0.1', port: opts.apiPort ?? 0, tls: creds.serving } },
    onProgress: (s, d, t) => progress.update(s, d, t),
    onError: opts.onError ?? ((err, ctx) => fs.appendFileSync(p.log, `${new Date().toISOString()} ${ctx}: ${(err as Error)?.message ?? err}\n`)),
  }).catch(async (err) => {
    await auth?.stop();
    throw err;
  });
  progress.stop();
  fs.writeFileSync(p.pid, String(process.pid), { mode: 0o600 });
  const kubeconfig = cluster.api?.url ? creds.writeKubeconfig(cluster.api.url) : undefined;
  const merged = kubeconfig && opts.mergeKubeconfig ? mergeInto(opts.mergeKubeconfig, kubeconfig.config) : undefined;
  fs.writeFileSync(p.config, JSON.stringify({ ...opts, onError: undefined, name, mergedKubeconfig: merged }, null, 2), { mode: 0o600 });
  const nodeCount = cluster.nodes.length + cluster.remoteNodes.size;
  out.log(`kemu cluster is up: ${nodeCount} node(s)${opts.nodeProcesses ? ' in their own processes' : ''}, store ${opts.store ?? 'memory'}, state in ${opts.stateDir}`);
  out.log(`try: kemu get nodes -o wide${opts.stateDir !== defaultStateDir() ? ` --state-dir ${opts.stateDir}` : ''}`);
  if (kubeconfig) {
    out.log(`API server: ${cluster.api!.url} (kubeconfig ${kubeconfig.path})`);
    out.log(merged ? `kubectl context "${contextName(name)}" merged into ${merged}` : `try: kubectl --kubeconfig ${kubeconfig.path} get nodes`);
  }
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await auth?.stop();
      await cluster.stop();
      if (merged) unmergeFrom(merged, name);
      fs.rmSync(p.pid, { force: true });
    })();
    return stopping;
  };
  return { stop };
}

function mergeInto(target: string | true, config: Kubeconfig): string {
  const file = target === true ? defaultKubeconfigPath() : target;
  const existing = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  writeKubeconfigFile(file, mergeKubeconfig(existing, config));
  return file;
}

function unmergeFrom(file: string, name: string): void {
  if (!fs.existsSync(file)) return;
  writeKubeconfigFile(file, removeFromKubeconfig(fs.readFileSync(file, 'utf8'), name));
}

/**
 * `kemu kubeconfig`: the admin kubeconfig of the running cluster, or with `user` one for that user (and
 * `groups`) holding a client certificate signed by the cluster CA.
 */
export async function kubeconfig(stateDir: string, out: Out = stdio, as: { user?: string; groups?: string[] } = {}): Promise<void> {
  const file = paths(stateDir).kubeconfig;
  if (!fs.existsSync(file)) throw new UsageError(`no kubeconfig in ${stateDir}: start a cluster with \`kemu up\``);
  if (as.user !== undefined) {
    const config = fs.existsSync(paths(stateDir).config) ? JSON.parse(fs.readFileSync(paths(stateDir).config, 'utf8')) : {};
    try {
      out.log((await userKubeconfig({ stateDir, name: config.name ?? 'kemu', user: as.user, groups: as.groups ?? [] })).trimEnd());
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    return;
  }
  out.log(fs.readFileSync(file, 'utf8').trimEnd());
}

async function detach(opts: ClusterOptions, out: Out) {
  const p = paths(opts.stateDir);
  const args = process.argv.slice(1).filter((a) => a !== '--detach' && a !== '-d');
  const log = fs.openSync(p.log, 'a', 0o600);
  const child = spawn(process.execPath, [...process.execArgv, ...clusterV8Flags(), ...args], { detached: true, stdio: ['ignore', log, log], env: process.env });
  child.unref();
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`kemu up exited with code ${child.exitCode}; see ${p.log}`);
    const ok = await client(opts.stateDir)
      .info()
      .then((i) => (i as { ready?: boolean }).ready === true)
      .catch(() => false);
    if (ok) {
      out.log(`kemu cluster is up in the background (pid ${child.pid}); stop it with \`kemu down\``);
      return undefined;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`kemu up did not become ready within 120 s; see ${p.log}`);
}

/** `kemu node`: one node joining a running cluster, until SIGINT/SIGTERM. */
export async function node(
  o: Omit<RunNodeOptions, 'store' | 'storage' | 'onError'> & {
    storage?: 'sim' | 'hostpath';
    apiSocket?: string;
    etcdEndpoints?: string[];
  },
  out: Out = stdio,
): Promise<{ stop(): Promise<void> }> {
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(o.name) || o.name.length > 253)
    throw new UsageError(`invalid node name ${JSON.stringify(o.name)}: use lower-case letters, digits, '-' and '.'`);
  if (isRealRuntime(o.runtime) && o.datapath !== 'linux')
    throw new UsageError(`--runtime ${o.runtime} needs real network namespaces: add --datapath linux`);
  if (o.datapath === 'linux') {
    const why = linuxUnsupportedReason();
    if (why) throw new UsageError(`--datapath linux cannot run here: ${why}`);
  }
  const apiSocket = o.apiSocket ?? paths(o.stateDir).socket;
  const stores = await nodeStores({ apiSocket, etcdEndpoints: o.etcdEndpoints });
  const store = stores.store;
  // Fail early, with the fix, when there is no cluster to join.
  await store.resourceVersion().catch(async (err) => {
    await stores.close();
    throw err;
  });
  const running = await runNode({
    ...o,
    storage: o.storage ?? (isRealRuntime(o.runtime) ? 'hostpath' : 'sim'),
    store,
    storeFor: stores.storeFor,
    onError: (err, ctx) => out.err(`${new Date().toISOString()} ${ctx}: ${(err as Error)?.message ?? err}`),
  });
  out.log(`node ${o.name} is up: runtime ${running.node.criSocket}, CSI ${running.node.csiSocket}`);
  return {
    stop: async () => {
      await running.stop();
      await stores.close();
    },
  };
}

/** `kemu down`: stops a cluster started by `kemu up`. */
export async function down(stateDir: string, out: Out = stdio): Promise<void> {
  const p = paths(stateDir);
  if (!fs.existsSync(p.pid)) throw new UsageError(`no running cluster found in ${stateDir} (no kemu.pid)`);
  const pid = Number(fs.readFileSync(p.pid, 'utf8'));
  try {
    process.kill(pid, 'SIGTERM');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') {
      fs.rmSync(p.pid, { force: true });
      fs.rmSync(p.socket, { force: true });
      out.log(`the cluster (pid ${pid}) was not running; cleaned up its files`);
      return;
    }
    throw err;
  }
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && fs.existsSync(p.pid)) await new Promise((r) => setTimeout(r, 100));
  out.log(`kemu cluster (pid ${pid}) stopped`);
}

function kindOf(word: string): string {
  const kind = resolveKind(word);
  if (!kind) throw new UsageError(`the server doesn't have a resource type "${word}"`);
  return kind;
}

export interface GetOptions {
  output?: string;
  namespace?: string;
  allNamespaces?: boolean;
  selector?: string;
  stateDir?: string;
}

export async function get(kindWord: string, name: string | undefined, o: GetOptions, out: Out = stdio) {
  const kind = kindOf(kindWord);
  const api = client(o.stateDir);
  const info = kindInfo(kind);
  const ns = info.namespaced ? (o.allNamespaces ? undefined : (o.namespace ?? 'default')) : undefined;
  const items: KubeObject[] = name ? [await api.get(kind, ns, name)] : (await api.list(kind, { namespace: ns, labelSelector: o.selector })).items;
  if (o.output === 'json') return out.log(JSON.stringify(name ? items[0] : { apiVersion: 'v1', kind: 'List', items }, null, 2));
  if (o.output === 'yaml') return out.log(toYaml(name ? items[0] : items).trimEnd());
  if (o.output && o.output !== 'wide') throw new UsageError(`unable to match a printer suitable for the output format "${o.output}", allowed formats are: json,wide,yaml`);
  if (!items.length) {
    out.err(ns ? `No resources found in ${ns} namespace.` : 'No resources found');
    return;
  }
  out.log(printTable(kind, items, { wide: o.output === 'wide', allNamespaces: o.allNamespaces && info.namespaced }));
}

export async function describe(kindWord: string, name: string, o: GetOptions, out: Out = stdio) {
  const kind = kindOf(kindWord);
  const api = client(o.stateDir);
  const info = kindInfo(kind);
  const ns = info.namespaced ? (o.namespace ?? 'default') : undefined;
  const obj = await api.get(kind, ns, name);
  const events = (await api.list('Event', { namespace: ns ?? 'default' })).items.filter(
    (e) => (e as { involvedObject?: { uid?: string } }).involvedObject?.uid === obj.metadata.uid,
  );
  out.log(describeObject(obj, events as never));
}

function readText(file: string): string {
  try {
    return file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
}

function readManifests(file: string): KubeObject[] {
  return parseManifests(readText(file));
}

/**
 * `kemu apply -f`: every valid object of the file is created or patched; each invalid one (unknown kind,
 * field errors, refused by the server) is reported on its own and the others still apply, as kubectl does.
 * Returns the exit status: 1 when anything was not applied.
 */
export async function apply(file: string, o: { namespace?: string; stateDir?: string }, out: Out = stdio): Promise<number> {
  const api = client(o.stateDir);
  const { objects, errors } = parseManifestsEach(readText(file), { source: file === '-' ? 'STDIN' : file });
  let failed = errors.length;
  for (const obj of objects) {
    const info = kindInfo(obj.kind);
    if (info.namespaced) obj.metadata = { ...obj.metadata, namespace: obj.metadata?.namespace ?? o.namespace ?? 'default' };
    const what = `${info.resource.replace(/s$/, '')}${info.group ? `.${info.group}` : ''}/${obj.metadata.name}`;
    try {
      try {
        // Like kubectl apply: only the fields the manifest states are changed (a strategic merge patch), so
        // what the cluster filled in (defaults, bindings, status) is kept.
        const cur = await api.get(obj.kind, obj.metadata.namespace, obj.metadata.name ?? '');
        const { resourceVersion: _rv, ...metadata } = obj.metadata;
        const after = await api.patch(obj.kind, obj.metadata.namespace, obj.metadata.name ?? '', { ...obj, metadata }, 'strategic');
        out.log(`${what} ${after.metadata.resourceVersion === cur.metadata.resourceVersion ? 'unchanged' : 'configured'}`);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await api.create(obj);
        out.log(`${what} created`);
      }
    } catch (err) {
      if (err instanceof ClusterUnreachableError) throw err;
      failed++;
      out.err(isStatusError(err) ? `Error from server (${err.reason}): error when applying "${file}": ${err.message}` : `error: ${(err as Error).message ?? err}`);
    }
  }
  for (const e of errors) out.err(e.message.startsWith('error') || e.message.startsWith('The ') ? e.message : `error: ${e.message}`);
  return failed ? 1 : 0;
}

export async function del(kindWord: string | undefined, name: string | undefined, o: { file?: string; namespace?: string; stateDir?: string; gracePeriod?: number }, out: Out = stdio) {
  const api = client(o.stateDir);
  const targets: { kind: string; ns?: string; name: string }[] = [];
  if (o.file) {
    for (const obj of readManifests(o.file)) targets.push({ kind: obj.kind, ns: obj.metadata.namespace ?? o.namespace ?? 'default', name: obj.metadata.name ?? '' });
  } else {
    if (!kindWord || !name) throw new UsageError('kemu delete needs KIND NAME, or -f FILE');
    targets.push({ kind: kindOf(kindWord), ns: o.namespace ?? 'default', name });
  }
  for (const t of targets) {
    const info = kindInfo(t.kind);
    await api.delete(t.kind, info.namespaced ? t.ns : undefined, t.name, o.gracePeriod);
    out.log(`${info.resource.replace(/s$/, '')} "${t.name}" deleted`);
  }
}

export async function logs(pod: string, o: { container?: string; namespace?: string; tail?: number; stateDir?: string }, out: Out = stdio) {
  const text = await client(o.stateDir).logs(o.namespace ?? 'default', pod, o.container, o.tail);
  if (text) process.stdout.write(text);
  void out;
}

export async function exec(pod: string, command: string[], o: { container?: string; namespace?: string; stateDir?: string }): Promise<number> {
  if (!command.length) throw new UsageError('you must specify at least one command for the container: kemu exec POD -- CMD [ARGS...]');
  const r = await client(o.stateDir).exec(o.namespace ?? 'default', pod, command, o.container);
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  return r.exitCode;
}

/** `kemu trace FROM TO`: the probe's path hop by hop; exit status 1 when nothing came back, with the reason last. */
export async function trace(from: string, to: string, o: { namespace?: string; stateDir?: string; output?: string }, out: Out = stdio): Promise<number> {
  const ns = o.namespace ?? 'default';
  const qualify = (x: string) => {
    if (/^(svc|service)\/[^/]+$/.test(x.split(':')[0]!)) return x.replace(/^(svc|service)\//, `svc/${ns}/`);
    return x.includes('/') || /^[\d.]+(:\d+)?$/.test(x) || x.includes(':') || x.includes('.') ? x : `${ns}/${x}`;
  };
  const r = (await client(o.stateDir).trace(qualify(from), qualify(to))) as {
    reachable: boolean;
    ip: string;
    port?: number;
    text: string;
    error?: { code?: string; message: string };
    trace?: { kind: string; detail: string; reason?: string }[];
  };
  if (o.output === 'json') {
    out.log(JSON.stringify(r, null, 2));
    return r.reachable ? 0 : 1;
  }
  out.log(r.text.trimEnd());
  const dest = `${from} -> ${to} (${r.ip}${r.port ? `:${r.port}` : ''})`;
  if (r.reachable) {
    out.log(`${dest}: ${r.port ? 'connected' : 'reachable'}`);
    return 0;
  }
  // The last drop names the rule (or route) that stopped the packet.
  const drop = [...(r.trace ?? [])].reverse().find((h) => h.kind === 'drop');
  const why = drop ? `dropped at ${drop.detail}${drop.reason ? ` (${drop.reason})` : ''}` : (r.error?.message ?? 'no reply');
  out.log(`${dest}: unreachable: ${why}`);
  return 1;
}

/**
 * `kemu policy matrix`: which pods of a namespace reach which, found by sending real (simulated) packets
 * (`kemu trace` for every pair; a TCP connect with --port, else an ICMP echo). With `expect`, each cell is
 * also evaluated from the policies themselves; any disagreement is marked `!` and the exit status is 1.
 */
export async function policyMatrix(o: { namespace?: string; port?: number; expect?: boolean; stateDir?: string }, out: Out = stdio): Promise<number> {
  const ns = o.namespace ?? 'default';
  const api = client(o.stateDir);
  const pods = ((await api.list('Pod', { namespace: ns })).items as Pod[])
    .filter((p) => p.status?.podIP && p.status.phase === 'Running')
    .sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
  if (pods.length === 0) throw new UsageError(`no running pods in namespace ${ns}`);
  const policies = o.expect ? ((await api.list('NetworkPolicy', {})).items as NetworkPolicy[]) : [];
  const namespaces = o.expect
    ? (await api.list('Namespace', {})).items.map((n) => ({ name: n.metadata.name ?? '', labels: n.metadata.labels ?? {} }))
    : [];
  const names = pods.map((p) => p.metadata.name!);
  const w = Math.max(...names.map((n) => n.length), 4);
  out.log(`${''.padEnd(w)}  ${names.map((n) => n.padEnd(w)).join(' ')}`);
  let disagree = 0;
  for (const from of pods) {
    const cells: string[] = [];
    for (const to of pods) {
      if (from === to) {
        cells.push('-'.padEnd(w));
        continue;
      }
      const target = o.port ? `${to.status!.podIP}:${o.port}` : to.status!.podIP!;
      const r = (await api.trace(`${ns}/${from.metadata.name}`, target)) as { reachable: boolean };
      let cell = r.reachable ? 'X' : '.';
      if (o.expect && allowed({ from, to, port: o.port }, policies, namespaces) !== r.reachable) {
        cell += '!';
        disagree++;
      }
      cells.push(cell.padEnd(w));
    }
    out.log(`${from.metadata.name!.padEnd(w)}  ${cells.join(' ')}`);
  }
  out.log(`X reachable, . dropped${o.expect ? `, ! disagrees with the policies (${disagree} cells)` : ''}; rows are sources, columns destinations${o.port ? `, TCP port ${o.port}` : ', ICMP echo'}`);
  return disagree ? 1 : 0;
}

/** Waits until every pod matching the filter is Running (or the deadline passes). */
export async function waitForPods(api: { list(kind: string, o: { namespace?: string }): Promise<{ items: KubeObject[] }> }, namespace: string, count: number, timeoutMs: number): Promise<Pod[]> {
  const end = Date.now() + timeoutMs;
  let pods: Pod[] = [];
  while (Date.now() < end) {
    pods = (await api.list('Pod', { namespace })).items as Pod[];
    if (pods.length >= count && pods.every((p) => p.status?.phase === 'Running' && p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True')) return pods;
    await new Promise((r) => setTimeout(r, 100));
  }
  const stuck = pods.filter((p) => p.status?.phase !== 'Running').map((p) => `${p.metadata.name} (${p.status?.phase ?? 'Pending'})`);
  throw new Error(`timed out waiting for ${count} pods to be Running; not running: ${stuck.join(', ') || 'none created'}`);
}

export { ClusterUnreachableError };
