// One guard for every test that needs something outside node_modules: a peer program from Debian, a file it
// installs, a Python module, root, or network namespaces.
//
// On a developer's machine a missing peer skips the suite with one printed reason. Under CI (CI=true) it is a
// failing test that names the Debian package to add to .ci/apt-packages: a CI run must never pass by skipping
// what it was meant to prove.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'vitest';

export { ETCD_BIN, type EtcdServer, freePort, startEtcd } from './etcd.js';

/** Something a suite needs, with what installs it. */
export interface Requirement {
  /** What is needed, as the message names it ("tshark", "root", "/usr/lib/cni/bridge"). */
  readonly what: string;
  /** How to get it: a Debian package name, or a sentence for what no package brings. */
  readonly install: string;
  present(): boolean;
}

/** True when this process runs as CI does: CI set to anything but "" / "0" / "false". */
export function inCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = (env.CI ?? '').trim().toLowerCase();
  return v !== '' && v !== '0' && v !== 'false';
}

const memo = new Map<string, boolean>();
function once(key: string, probe: () => boolean): boolean {
  let v = memo.get(key);
  if (v === undefined) {
    try {
      v = probe();
    } catch {
      v = false;
    }
    memo.set(key, v);
  }
  return v;
}

function onPath(name: string): boolean {
  if (name.includes('/')) return isExecutable(name);
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  // Debian's sbin directories hold iproute2, nft, iptables...: root's PATH has them, a sudo'd one may not.
  for (const d of [...dirs, '/usr/sbin', '/sbin']) if (isExecutable(path.join(d, name))) return true;
  return false;
}

function isExecutable(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) return false;
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Running as root (CI does; netns, mounts, runc and most daemons need it). */
export const root: Requirement = {
  what: 'root',
  install: 'run as root, as CI does',
  present: () => process.getuid?.() === 0,
};

/** A program on PATH (or at an absolute path), installed by a Debian package. */
export function program(name: string, debianPackage: string): Requirement {
  return { what: name, install: debianPackage, present: () => once(`program:${name}`, () => onPath(name)) };
}

/** A file, e.g. a plugin under /usr/lib/cni, installed by a Debian package. */
export function file(p: string, debianPackage: string): Requirement {
  return { what: p, install: debianPackage, present: () => once(`file:${p}`, () => fs.existsSync(p)) };
}

/** Where .ci/run unpacks Debian's kubernetes-client (kubectl v1.20). */
export const KUBECTL_OLD = '/opt/kemu-peers/kubernetes-client/usr/bin/kubectl';

/** A Python module importable by /usr/bin/python3 (Debian's python3-* packages install there). */
export function pythonModule(module: string, debianPackage: string, python = '/usr/bin/python3'): Requirement {
  return {
    what: `python3 module ${module}`,
    install: debianPackage,
    present: () =>
      once(`py:${python}:${module}`, () => spawnSync(python, ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0),
  };
}

/** Root with iproute2's `ip netns`: the tests create network namespaces of their own. */
export const netns: Requirement = {
  what: 'network namespaces (root and ip netns)',
  install: 'iproute2, as root',
  present: () =>
    root.present() && once('netns', () => spawnSync('ip', ['netns', 'list'], { stdio: 'ignore' }).status === 0),
};

/** Anything else, probed by the caller (e.g. an optional npm dependency that must load). */
export function probe(what: string, install: string, check: () => boolean): Requirement {
  return { what, install, present: () => once(`probe:${what}`, check) };
}

/** The requirements of `reqs` that are missing, in order, each once. */
export function missingOf(reqs: readonly Requirement[]): Requirement[] {
  const seen = new Set<string>();
  return reqs.filter((r) => !r.present() && !seen.has(r.what) && seen.add(r.what) !== undefined);
}

/** The one-line reason a suite cannot run: "needs tshark (Debian package tshark), root (run as root ...)". */
export function describeMissing(suite: string, missing: readonly Requirement[]): string {
  // A bare package name reads "tshark (Debian package tshark)"; anything else is already a sentence.
  const parts = missing.map((m) => `${m.what} (${/^[a-z0-9][a-z0-9.+-]*$/.test(m.install) ? `Debian package ${m.install}` : m.install})`);
  return `${suite} needs ${parts.join(', ')}`;
}

/**
 * Whether `suite` can run here. Pass the answer to `describe.runIf`. With everything present: true. Missing
 * something: outside CI, prints why it skips and returns false; under CI, registers a failing test that says
 * which package to add, and returns false.
 */
export function requirePeers(suite: string, reqs: readonly Requirement[], env: NodeJS.ProcessEnv = process.env): boolean {
  const missing = missingOf(reqs);
  if (missing.length === 0) return true;
  const reason = describeMissing(suite, missing);
  if (inCI(env)) {
    it(`${suite}: its peers are installed`, () => {
      throw new Error(`${reason}. Add the Debian package to .ci/apt-packages (CI must not skip it).`);
    });
  } else {
    console.warn(`skipping ${reason}`);
  }
  return false;
}

/**
 * The peers the project's tests use, each with the Debian package that installs it (all are in
 * .ci/apt-packages). One home for "which package gives X", so every suite's message names the same one.
 */
export const peers = {
  root,
  netns,
  /** The reference CNI plugins (bridge, host-local, portmap, loopback, ...). */
  referenceCni: probe(
    'the reference CNI plugins in /usr/lib/cni',
    'containernetworking-plugins',
    () => spawnSync('/usr/lib/cni/bridge', [], { env: { CNI_COMMAND: 'VERSION' }, stdio: 'ignore' }).status === 0,
  ),
  etcd: program('etcd', 'etcd-server'),
  etcdctl: program('etcdctl', 'etcd-client'),
  tshark: program('tshark', 'tshark'),
  bird: program('bird', 'bird2'),
  birdc: program('birdc', 'bird2'),
  gobgpd: program('gobgpd', 'gobgpd'),
  gobgp: program('gobgp', 'gobgpd'),
  protoc: program('protoc', 'protobuf-compiler'),
  /** protoc's well-known types (google/protobuf/*.proto), which protoc itself does not ship. */
  protobufIncludes: file('/usr/include/google/protobuf/descriptor.proto', 'libprotobuf-dev'),
  pythonGrpc: pythonModule('grpc', 'python3-grpcio'),
  pythonProtobuf: pythonModule('google.protobuf', 'python3-protobuf'),
  /** The official Kubernetes Python client. */
  pythonKubernetes: pythonModule('kubernetes', 'python3-kubernetes'),
  /** The Prometheus Python client, whose parser reads the text exposition format as Prometheus does. */
  pythonPrometheusClient: pythonModule('prometheus_client', 'python3-prometheus-client'),
  busybox: file('/bin/busybox', 'busybox-static'),
  unshare: program('unshare', 'util-linux'),
  nsenter: program('nsenter', 'util-linux'),
  iptables: program('iptables', 'iptables'),
  nft: program('nft', 'nftables'),
  ping: program('ping', 'iputils-ping'),
  curl: program('curl', 'curl'),
  runc: program('runc', 'runc'),
  containerd: program('containerd', 'containerd'),
  dockerRegistry: program('docker-registry', 'docker-registry'),
  skopeo: program('skopeo', 'skopeo'),
  umoci: program('umoci', 'umoci'),
  openssl: program('openssl', 'openssl'),
  /** ISC BIND's dig, a DNS client nobody here wrote, for the cluster DNS server's wire format. */
  dig: program('dig', 'bind9-dnsutils'),
  /** kubectl v1.32 comes with this kind of machine's image (not from a registry). */
  kubectl: probe('kubectl', "kubectl on PATH (this machine image's /usr/bin/kubectl)", () => onPath('kubectl')),
  /**
   * kubectl v1.20 from Debian's kubernetes-client, unpacked beside the image's kubectl (whose package owns
   * /usr/bin/kubectl too); .ci/run unpacks it to this path.
   */
  kubectlOld: file(KUBECTL_OLD, "kubernetes-client (unpacked by .ci/run: apt-get download kubernetes-client && dpkg-deb -x kubernetes-client_*.deb /opt/kemu-peers/kubernetes-client)"),
} as const;
