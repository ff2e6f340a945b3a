#!/usr/bin/env node
// clusterloader2's "load" test shape on the composed cluster, everything simulated (store, controllers,
// scheduler, kubelets, CRI sim, CNI on netsim): per namespace of 100 nodes, 30 pods per node split as
// clusterloader2's testing/load/config.yaml splits them (1/4 in big Deployments of 250, 1/4 in medium ones of
// 30, 1/2 in small ones of 5; a small (5) and a medium (30) StatefulSet with their headless Services; a small,
// a medium and a big Job; one DaemonSet), and a Service per Deployment. Services are made first, one at a
// time; the workloads then either in a burst or paced as clusterloader2's RandomizedTimeLimitedLoad paces
// them (each object at a uniformly random moment within totalPods / throughput seconds).
//
// Reports Deployments ready per second (first Deployment created to the last one Available), the pod
// startup latency as upstream's SLI measures it (the pod's creation to all its containers running, both seen
// through a watch; the sim's image pulls are served from the node's image store after the first), and CPU
// time of this process per pod. Medians over --runs fresh clusters.
//
//   flock /tmp/kemu-bench.lock node --conditions=@kemu/source --import tsx tools/bench/controllers/load.mjs \
//        --nodes 100 --throughput 100 --runs 3        (paced: 100 pods/s)
//   ... --nodes 100 --throughput 0                      (burst: everything at once)
//   --services no: leave out the Services (per Deployment and the StatefulSets' headless ones), so every
//   node's kube-proxy has next to nothing to program; see the README for why the 5,000-node run needs that
//   --proxy-mode iptables|nftables: every node's kube-proxy mode (nftables syncs only the changed Services)
//   --state-root DIR: where the nodes' files go (default /dev/shm when it exists: on a VM disk every inode
//   the kubelet and runtime create per pod costs ~0.8 ms and would be measured instead of the cluster)
//
// The bench runs in a node with the V8 flags `kemu up` gives its cluster process (heap limit, no memory
// reducer, doubling heap growth, 64 MiB semi-space; packages/kemu/src/v8-flags.ts), starting itself again
// when they are missing; flags given on the command line win.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Cluster, clusterV8Flags, runWithV8Flags } from '../../../packages/kemu/src/index.ts';

const v8Flags = clusterV8Flags();
if (v8Flags.length) process.exit(await runWithV8Flags(v8Flags));

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '100' },
    'pods-per-node': { type: 'string', default: '30' },
    throughput: { type: 'string', default: '10' },
    runs: { type: 'string', default: '1' },
    'state-root': { type: 'string', default: fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir() },
    seed: { type: 'string', default: '1' },
    services: { type: 'string', default: 'yes' },
    'proxy-mode': { type: 'string', default: 'iptables' },
  },
});
const nodes = Number(values.nodes);
const podsPerNode = Number(values['pods-per-node']);
const throughput = Number(values.throughput);
const BIG = 250;
const MEDIUM = 30;
const SMALL = 5;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

/** The objects of one run, as clusterloader2's load config computes them. */
function loadShape(nodeCount, perNode) {
  const nodesPerNamespace = Math.min(nodeCount, 100);
  const namespaces = Math.max(1, Math.floor(nodeCount / nodesPerNamespace));
  const podsPerNamespace = nodesPerNamespace * perNode;
  // StatefulSets take one small and one medium Deployment's place, Jobs one of each size.
  const big = Math.max(0, Math.floor(podsPerNamespace / (4 * BIG)) - 1);
  const medium = Math.max(0, Math.floor(podsPerNamespace / (4 * MEDIUM)) - 2);
  const small = Math.max(0, Math.floor(podsPerNamespace / (2 * SMALL)) - 2);
  const services = [];
  const workloads = [];
  for (let n = 1; n <= namespaces; n++) {
    const ns = `load-${n}`;
    for (const [size, count, replicas] of [['big', big, BIG], ['medium', medium, MEDIUM], ['small', small, SMALL]]) {
      for (let i = 0; i < count; i++) {
        const name = `${size}-deployment-${i}`;
        if (values.services !== 'no') services.push(service(ns, name, false));
        workloads.push(deployment(ns, name, replicas));
      }
    }
    for (const [size, replicas] of [['small', SMALL], ['medium', MEDIUM]]) {
      if (values.services !== 'no') services.push(service(ns, `${size}-statefulset-0`, true));
      workloads.push(statefulSet(ns, `${size}-statefulset-0`, replicas));
    }
    for (const [size, replicas] of [['small', SMALL], ['medium', MEDIUM], ['big', BIG]]) workloads.push(job(ns, `${size}-job-0`, replicas));
  }
  workloads.push(daemonSet('load-1', 'daemonset-0', nodeCount));
  return { namespaces, services, workloads, pods: workloads.reduce((a, w) => a + w.pods, 0) };
}

const labels = (name) => ({ group: 'load', name });
const podTemplate = (name) => ({
  metadata: { labels: labels(name) },
  spec: {
    containers: [{ name: name.slice(0, 63), image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '10M' } } }],
    terminationGracePeriodSeconds: 1,
  },
});
function service(namespace, name, headless) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { selector: { name }, ports: [{ port: 80, targetPort: 80 }], ...(headless ? { clusterIP: 'None' } : {}) },
  };
}
function deployment(namespace, name, replicas) {
  return {
    pods: replicas,
    obj: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace, labels: labels(name) },
      spec: { replicas, selector: { matchLabels: { name } }, template: podTemplate(name) },
    },
  };
}
function statefulSet(namespace, name, replicas) {
  return {
    pods: replicas,
    obj: {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, namespace, labels: labels(name) },
      spec: { replicas, serviceName: name, podManagementPolicy: 'Parallel', selector: { matchLabels: { name } }, template: podTemplate(name) },
    },
  };
}
function job(namespace, name, replicas) {
  const t = podTemplate(name);
  return {
    pods: replicas,
    obj: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name, namespace, labels: labels(name) },
      spec: { parallelism: replicas, completions: replicas, template: { ...t, spec: { ...t.spec, restartPolicy: 'Never' } } },
    },
  };
}
function daemonSet(namespace, name, nodeCount) {
  return {
    pods: nodeCount,
    obj: {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace, labels: labels(name) },
      spec: { selector: { matchLabels: { name } }, template: podTemplate(name) },
    },
  };
}

/** A small seeded generator, so paced runs offer the same schedule each time. */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

async function run(index) {
  const shape = loadShape(nodes, podsPerNode);
  const stateDir = fs.mkdtempSync(path.join(values['state-root'], 'kemu-bench-load-'));
  const tBoot = performance.now();
  const cluster = await Cluster.start({ stateDir, nodes, fast: false, proxyMode: values['proxy-mode'], onError: () => {} });
  const bootSeconds = (performance.now() - tBoot) / 1000;
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 500);
  try {
    const store = cluster.store;
    for (let n = 1; n <= shape.namespaces; n++) await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `load-${n}` } });
    // Sequence: one Service at a time, as the tuning set of that step.
    for (const s of shape.services) await store.create(s);

    const podSeen = new Map();
    const startup = [];
    const boundAt = new Map();
    const toBound = [];
    const boundToRunning = [];
    // Startup per owning workload kind (a ReplicaSet's pods count as its Deployment's): the DaemonSet's
    // pods arrive as one burst of a pod per node, not at the paced rate, so they are shown apart too.
    const startupByKind = new Map();
    const slowPacedByStep = new Map();
    const ownerKind = (p) => {
      const k = p.metadata.ownerReferences?.[0]?.kind ?? 'Pod';
      return k === 'ReplicaSet' ? 'Deployment' : k;
    };
    const pods = await store.watch('Pod', {});
    let running = 0;
    let resolvePods;
    const allPods = new Promise((r) => (resolvePods = r));
    void (async () => {
      for await (const ev of pods) {
        if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') continue;
        const p = ev.object;
        if (p.metadata.labels?.group !== 'load') continue;
        const uid = p.metadata.uid;
        let t = podSeen.get(uid);
        if (t === undefined) podSeen.set(uid, (t = performance.now()));
        if (t < 0) continue;
        // The breakdown: creation to bound (scheduler), bound to running (kubelet, runtime, CNI, status).
        if (p.spec.nodeName && !boundAt.has(uid)) boundAt.set(uid, performance.now());
        const cs = p.status?.containerStatuses ?? [];
        if (cs.length === p.spec.containers.length && cs.every((c) => c.state?.running)) {
          const now = performance.now();
          startup.push(now - t);
          const kind = ownerKind(p);
          if (!startupByKind.has(kind)) startupByKind.set(kind, []);
          startupByKind.get(kind).push(now - t);
          // When the paced pods that missed the 5 s SLO were created (30 s steps), to tell a burst from a stall.
          if (kind !== 'DaemonSet' && now - t > 5000) {
            const step = Math.floor((t - t0) / 30_000) * 30;
            slowPacedByStep.set(step, (slowPacedByStep.get(step) ?? 0) + 1);
          }
          const b = boundAt.get(uid) ?? now;
          toBound.push(b - t);
          boundToRunning.push(now - b);
          boundAt.delete(uid);
          podSeen.set(uid, -1);
          if (++running === shape.pods) resolvePods();
        }
      }
    })();
    const deployments = await store.watch('Deployment', {});
    const deploymentCount = shape.workloads.filter((w) => w.obj.kind === 'Deployment').length;
    const readyDeployments = new Set();
    let lastDeploymentReady = 0;
    void (async () => {
      for await (const ev of deployments) {
        const d = ev.object;
        const st = d.status ?? {};
        if (!readyDeployments.has(d.metadata.uid) && st.observedGeneration === d.metadata.generation && st.availableReplicas === d.spec.replicas && st.updatedReplicas === d.spec.replicas) {
          readyDeployments.add(d.metadata.uid);
          lastDeploymentReady = performance.now();
        }
      }
    })();

    // RandomizedTimeLimitedLoad: each object at a uniformly random moment within the saturation time.
    const random = rng(Number(values.seed) + index);
    const saturationMs = throughput > 0 ? (shape.pods / throughput) * 1000 : 0;
    const plan = shape.workloads.map((w) => ({ w, at: random() * saturationMs })).sort((a, b) => a.at - b.at);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    // Progress on stderr every 30 s, so a long run (5,000 nodes) shows where it is even if cut short.
    let lastCpu = 0;
    // Event-loop delay per step: a stall (every component shares this one loop) shows as a large max.
    const loopDelay = monitorEventLoopDelay({ resolution: 20 });
    loopDelay.enable();
    const progress = setInterval(async () => {
      const s = [...startup].sort((a, b) => a - b);
      const used = process.cpuUsage(cpu0);
      const cpuNow = (used.user + used.system) / 1e6;
      const cpuStep = cpuNow - lastCpu;
      lastCpu = cpuNow;
      const b = [...toBound].sort((x, y) => x - y);
      const loop = `loop delay p99 ${Math.round(loopDelay.percentile(99) / 1e6)} ms max ${Math.round(loopDelay.max / 1e6)} ms`;
      loopDelay.reset();
      let unbound = 0;
      for (const [uid, t] of podSeen) if (t >= 0 && !boundAt.has(uid)) unbound++;
      // Nodes the node lifecycle controller has marked unreachable (their lease went unrenewed too long).
      const nodeList = (await store.list('Node')).items;
      const unreachable = nodeList.filter((n) => n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unreachable')).length;
      console.error(
        `  ${((performance.now() - t0) / 1000).toFixed(0)} s: ${running}/${shape.pods} pods running, ${readyDeployments.size}/${deploymentCount} Deployments ready, startup p50 ${Math.round(pct(s, 0.5))} ms p99 ${Math.round(pct(s, 0.99))} ms (to bound p99 ${Math.round(pct(b, 0.99))} ms), cpu ${cpuNow.toFixed(0)} s (+${cpuStep.toFixed(0)}), rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB, ${unbound} unbound, ${unreachable} nodes unreachable, ${loop}`,
      );
    }, 30_000);
    let firstDeploymentCreated = 0;
    const inflight = new Set();
    for (const { w, at } of plan) {
      const wait = t0 + at - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      if (w.obj.kind === 'Deployment' && !firstDeploymentCreated) firstDeploymentCreated = performance.now();
      const p = store.create(w.obj).finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size >= 256) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    const createdSeconds = (performance.now() - t0) / 1000;
    await allPods;
    const allRunningSeconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    clearInterval(progress);
    loopDelay.disable();
    // Deployments report Available after their pods run; give the last statuses a moment to land.
    for (let i = 0; i < 600 && readyDeployments.size < deploymentCount; i++) await new Promise((r) => setTimeout(r, 100));
    pods.stop();
    deployments.stop();
    startup.sort((a, b) => a - b);
    toBound.sort((a, b) => a - b);
    boundToRunning.sort((a, b) => a - b);
    const deploymentSeconds = (lastDeploymentReady - firstDeploymentCreated) / 1000;
    const byKind = {};
    for (const [kind, xs] of [...startupByKind].sort()) {
      xs.sort((a, b) => a - b);
      byKind[kind] = { pods: xs.length, p50Ms: Math.round(pct(xs, 0.5)), p99Ms: Math.round(pct(xs, 0.99)) };
    }
    const paced = [...startupByKind].filter(([k]) => k !== 'DaemonSet').flatMap(([, xs]) => xs).sort((a, b) => a - b);
    console.error(`startup by workload kind: ${JSON.stringify(byKind)}`);
    console.error(`pods other than the DaemonSet's over 5 s, by creation time (s): ${JSON.stringify(Object.fromEntries(slowPacedByStep))}`);
    return {
      nodes,
      pods: shape.pods,
      deployments: deploymentCount,
      readyDeployments: readyDeployments.size,
      workloads: shape.workloads.length,
      services: shape.services.length,
      clusterStartSeconds: Number(bootSeconds.toFixed(1)),
      createdSeconds: Number(createdSeconds.toFixed(1)),
      allRunningSeconds: Number(allRunningSeconds.toFixed(1)),
      podsPerSecond: Math.round(shape.pods / allRunningSeconds),
      deploymentsReadyPerSecond: Number((readyDeployments.size / deploymentSeconds).toFixed(1)),
      startupP50Ms: Math.round(pct(startup, 0.5)),
      startupP90Ms: Math.round(pct(startup, 0.9)),
      startupP99Ms: Math.round(pct(startup, 0.99)),
      startupP99WithoutDaemonSetMs: Math.round(pct(paced, 0.99)),
      createdToBoundP50Ms: Math.round(pct(toBound, 0.5)),
      createdToBoundP99Ms: Math.round(pct(toBound, 0.99)),
      boundToRunningP50Ms: Math.round(pct(boundToRunning, 0.5)),
      boundToRunningP99Ms: Math.round(pct(boundToRunning, 0.99)),
      cpuMsPerPod: Number(((cpu.user + cpu.system) / 1000 / shape.pods).toFixed(2)),
      peakRssMiB: Math.round(Math.max(peakRss, process.resourceUsage().maxRSS * 1024) / 2 ** 20),
    };
  } finally {
    clearInterval(sampler);
    await cluster.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

const results = [];
for (let i = 0; i < Number(values.runs); i++) {
  const r = await run(i);
  console.error(`run ${i + 1}: ${JSON.stringify(r)}`);
  results.push(r);
}
const keys = Object.keys(results[0]).filter((k) => typeof results[0][k] === 'number');
console.log(
  JSON.stringify(
    { throughput: throughput || 'burst', proxyMode: values['proxy-mode'], services: values.services, loadavg: os.loadavg().map((l) => Number(l.toFixed(2))), runs: results.length, median: Object.fromEntries(keys.map((k) => [k, median(results.map((r) => r[k]))])) },
    null,
    2,
  ),
);
process.exit(0);
