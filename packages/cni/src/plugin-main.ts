import type { Datapath } from './datapath.js';
import { CniError, CniErrorCode } from './errors.js';
import { execDelegate } from './invoke-exec.js';
import { type CniPlugin, invokePlugin } from './skeleton.js';

/**
 * Picks the datapath for an exec'd plugin: `KEMU_DATAPATH=linux` (default) or `sim` with
 * `KEMU_NETSIM_STATE=<state file>`. Loaded lazily so plugins that never touch the network stay fast.
 */
export async function datapathFromEnv(env: Record<string, string | undefined>): Promise<Datapath> {
  const kind = env.KEMU_DATAPATH || 'linux';
  if (kind === 'linux') {
    const { createLinuxDatapath } = await import('./datapath-linux.js');
    return createLinuxDatapath({ hostNetns: env.KEMU_HOST_NETNS || undefined });
  }
  if (kind === 'sim') {
    const statePath = env.KEMU_NETSIM_STATE;
    if (!statePath) {
      throw new CniError(CniErrorCode.InvalidEnvironment, 'KEMU_DATAPATH=sim needs KEMU_NETSIM_STATE=<state file>');
    }
    // A variable specifier keeps the simulator optional: it is only resolved when asked for.
    const specifier = './datapath-sim.js';
    let mod: { createSimDatapath?: (o: { statePath: string }) => Datapath | Promise<Datapath> };
    try {
      mod = await import(specifier);
    } catch (e) {
      throw new CniError(
        CniErrorCode.PluginNotAvailable,
        'the simulated datapath is not available in this build (KEMU_DATAPATH=sim)',
        (e as Error).message,
      );
    }
    if (typeof mod.createSimDatapath !== 'function') {
      throw new CniError(CniErrorCode.PluginNotAvailable, 'the simulated datapath module does not export createSimDatapath');
    }
    return mod.createSimDatapath({ statePath });
  }
  throw new CniError(CniErrorCode.InvalidEnvironment, `KEMU_DATAPATH must be "linux" or "sim", got ${JSON.stringify(kind)}`);
}

async function readStdin(): Promise<Buffer> {
  if (process.stdin.isTTY) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Entry point of a plugin executable: env + stdin in, result or error JSON on stdout, exit status. */
export async function main(plugin: CniPlugin): Promise<void> {
  const env = process.env as Record<string, string | undefined>;
  let dp: Promise<Datapath> | undefined;
  const stdin = env.CNI_COMMAND === 'VERSION' && process.stdin.isTTY ? Buffer.from('{}') : await readStdin();
  const out = await invokePlugin(plugin, {
    env,
    stdin,
    datapath: () => {
      dp ??= datapathFromEnv(env);
      return dp;
    },
    delegate: execDelegate,
  });
  if (dp) await (await dp.catch(() => undefined))?.close?.();
  if (out.stdout) process.stdout.write(out.stdout);
  process.exitCode = out.exitCode;
}
