// Restart recovery: reload every persisted record and let the backend and network re-attach (containerd's
// restart path).
import fs from 'node:fs';
import path from 'node:path';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord, SandboxRecord } from './types.js';

/** Loads every persisted record and lets the backend and network re-attach (the containerd restart path). */
export async function recover(ctx: RuntimeContext): Promise<{ sandboxes: number; containers: number }> {
  await ctx.images.load();
  const sandboxes = ctx.state.loadAll<SandboxRecord>('sandboxes');
  const containers = ctx.state.loadAll<ContainerRecord>('containers').filter((c) => {
    if (sandboxes.some((s) => s.id === c.sandboxId)) return true;
    void ctx.state.remove('containers', c.id); // orphan of a sandbox removed mid-crash
    return false;
  });
  await ctx.backend.recover(sandboxes, containers);
  for (const sb of sandboxes) {
    ctx.sandboxes.set(sb.id, sb);
    ctx.sandboxIds.add(sb.id);
    ctx.sandboxNames.reserve(sb.name, sb.id);
    await ctx.state.save('sandboxes', sb.id, sb);
  }
  for (const c of containers) {
    ctx.containers.set(c.id, c);
    ctx.containerIds.add(c.id);
    ctx.containerNames.reserve(c.name, c.id);
    await ctx.state.save('containers', c.id, c);
  }
  const saved = ctx.state.dir ? path.join(ctx.state.dir, 'runtime-config.json') : undefined;
  if (saved && fs.existsSync(saved)) {
    const { podCidr } = JSON.parse(fs.readFileSync(saved, 'utf8')) as { podCidr?: string };
    if (podCidr) {
      await ctx.network.updatePodCidr(podCidr);
      ctx.podCidr = podCidr;
    }
  }
  await ctx.network.recover?.(sandboxes.filter((s) => s.networkReady).map((s) => ctx.netRequest(s)));
  return { sandboxes: sandboxes.length, containers: containers.length };
}
