// `kemu demo`: a three-node cluster on embedded defaults (memory store, simulated network and storage, sim
// runtime), the sample app applied, its pods shown Running with IPs and a volume, a cross-node packet
// trace, and then everything deleted and checked for leftovers (IPs, volumes, attachments, sandboxes).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAlreadyExists, type KubeObject, parseManifests, type Pod, type Store } from '@kemu/core';
import { Cluster } from './cluster.js';
import type { Out } from './commands.js';
import { printTable } from './printers.js';

/** A sample manifest shipped in the package's examples/ (demo-app.yaml for the sim modes, linux-app.yaml for the real ones). */
export function demoManifestPath(name = 'demo-app.yaml'): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const p of [path.join(here, '..', 'examples', name), path.join(here, '..', '..', 'examples', name)]) {
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`${name} not found next to the kemu package`);
}

async function until<T>(what: string, timeoutMs: number, fn: () => Promise<T | false | undefined>): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
}

/** What a deleted app may have left behind, counted across the cluster. */
export async function leftovers(cluster: Cluster) {
  let sandboxes = 0;
  let volumes = 0;
  let ips = 0;
  for (const n of cluster.nodes) {
    sandboxes += ((await n.cri.runtimeService.ListPodSandbox!({}, {} as never)).items ?? []).length;
    volumes += ((await n.csi.controller.ListVolumes({})).entries ?? []).length;
    ips += await cluster.network.allocatedIps(n.name);
  }
  const attachments = (await cluster.store.list('VolumeAttachment')).items.length;
  const pvs = (await cluster.store.list('PersistentVolume')).items.length;
  return { sandboxes, volumes, attachments, ips, pvs };
}

export async function applyObjects(store: Store, objs: KubeObject[]) {
  for (const o of objs) {
    try {
      await store.create(o);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
}

export async function runDemo(out: Out, opts: { nodes?: number; keep?: boolean; stateDir?: string } = {}): Promise<void> {
  const stateDir = opts.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-demo-'));
  const started = Date.now();
  const secs = () => ((Date.now() - started) / 1000).toFixed(1);
  out.log(`$ kemu up --nodes ${opts.nodes ?? 3}   (memory store, sim runtime, sim datapath, sim storage)`);
  const debug = !!process.env.KEMU_DEBUG;
  const cluster = await Cluster.start({
    stateDir,
    nodes: opts.nodes ?? 3,
    fast: true,
    onError: (err, ctx) => debug && out.err(`[debug] ${ctx}: ${(err as Error)?.stack ?? err}`),
  });
  try {
    const store = cluster.store;
    out.log(printTable('Node', (await store.list('Node')).items, { wide: true }));
    const file = demoManifestPath();
    out.log(`\n$ kemu apply -f ${path.relative(process.cwd(), file) || file}`);
    const objs = parseManifests(fs.readFileSync(file, 'utf8'));
    await applyObjects(store, objs);
    for (const o of objs) out.log(`${o.kind.toLowerCase()}/${o.metadata.name} created`);
    const podCount = objs.filter((o) => o.kind === 'Pod').length;
    await until('all demo pods Running and Ready', 60_000, async () => {
      const pods = (await store.list('Pod', { namespace: 'default' })).items as Pod[];
      return pods.length === podCount && pods.every((p) => p.status?.phase === 'Running' && p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True');
    });
    out.log(`\n$ kemu get pods -o wide        # ${secs()}s after start`);
    out.log(printTable('Pod', (await store.list('Pod', { namespace: 'default' })).items, { wide: true }));
    out.log('\n$ kemu get pvc');
    out.log(printTable('PersistentVolumeClaim', (await store.list('PersistentVolumeClaim', { namespace: 'default' })).items));
    out.log('\n$ kemu get volumeattachments');
    out.log(printTable('VolumeAttachment', (await store.list('VolumeAttachment')).items));

    const pods = (await store.list('Pod', { namespace: 'default', labelSelector: 'app=web' })).items as Pod[];
    const [a, b] = pods.sort((x, y) => (x.spec.nodeName ?? '').localeCompare(y.spec.nodeName ?? ''));
    out.log(`\n$ kemu trace ${a.metadata.name} ${b.metadata.name}     # ${a.spec.nodeName} -> ${b.spec.nodeName}`);
    const t = await cluster.trace(a.metadata.name ?? '', b.metadata.name ?? '');
    out.log(t.text);
    out.log(`${a.metadata.name} -> ${b.metadata.name} (${t.ip}): ${t.reachable ? 'reachable' : 'unreachable'}`);

    if (opts.keep) return;
    out.log('\n$ kemu delete -f demo-app.yaml');
    for (const o of [...objs].reverse()) {
      await store.delete(o.kind, o.metadata.namespace ?? 'default', o.metadata.name ?? '');
      out.log(`${o.kind.toLowerCase()} "${o.metadata.name}" deleted`);
    }
    let last: Record<string, number> = {};
    const left = await until('everything to be cleaned up', 60_000, async () => {
      const l = await leftovers(cluster);
      const pods = (await store.list('Pod')).items.length;
      last = { pods, ...l };
      return pods === 0 && l.sandboxes === 0 && l.volumes === 0 && l.attachments === 0 && l.ips === 0 && l.pvs === 0 && l;
    }).catch((err: Error) => {
      throw new Error(`${err.message}; still there: ${JSON.stringify(last)}`);
    });
    out.log(
      `\nleft behind: ${left.sandboxes} sandboxes, ${left.ips} IP allocations, ${left.volumes} volumes, ${left.pvs} PVs, ${left.attachments} VolumeAttachments  (${secs()}s in all)`,
    );
  } finally {
    await cluster.stop();
    if (!opts.stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
  }
}
