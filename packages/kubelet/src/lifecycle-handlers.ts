// postStart and preStop hooks, as the kubelet's HandlerRunner runs them: exec through CRI ExecSync, httpGet
// to the pod IP (or the given host) on a numbered or named port, sleep for the given seconds. Only a
// transport error fails an httpGet hook, not its status code. tcpSocket is accepted by the API for
// compatibility but is not a runnable hook. Errors carry the kubelet's message.
import type { Container, LifecycleHandler, Pod } from '@kemu/core';
import { resolvePort } from './prober.js';
import type { ProbeTransport, RuntimeApi } from './types.js';

export class LifecycleHookError extends Error {
  override readonly name = 'LifecycleHookError';
}

export interface HookTarget {
  pod: Pod;
  container: Container;
  containerId: string;
  podIP: string;
}

export interface HookRunner {
  runtime: RuntimeApi;
  transport: ProbeTransport;
}

/** `name_namespace(uid)`, how the kubelet names a pod in messages. */
export function formatPod(pod: Pod): string {
  return `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;
}

const goSlice = (xs: string[]) => `[${xs.join(' ')}]`;

/** Waits `ms`, or less when `signal` aborts first. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Runs one hook; resolves when it is done, throws LifecycleHookError when it failed. */
export async function runLifecycleHandler(r: HookRunner, h: LifecycleHandler, t: HookTarget, signal?: AbortSignal): Promise<void> {
  if (h.exec) {
    const cmd = h.exec.command ?? [];
    let res;
    try {
      res = await r.runtime.ExecSync({ containerId: t.containerId, cmd, timeout: 0 });
    } catch (err) {
      const why = (err as { details?: string }).details ?? (err as Error).message;
      throw new LifecycleHookError(`Exec lifecycle hook (${goSlice(cmd)}) for Container "${t.container.name}" in Pod "${formatPod(t.pod)}" failed - error: ${why}, message: ""`);
    }
    if (res.exitCode !== 0) {
      const stdout = Buffer.from(res.stdout ?? []).toString();
      const stderr = Buffer.from(res.stderr ?? []).toString();
      const output = stdout + stderr;
      throw new LifecycleHookError(
        `Exec lifecycle hook (${goSlice(cmd)}) for Container "${t.container.name}" in Pod "${formatPod(t.pod)}" failed - error: command '${cmd.join(' ')}' exited with ${res.exitCode}: ${stderr}, message: ${JSON.stringify(output)}`,
      );
    }
    return;
  }
  if (h.httpGet) {
    const g = h.httpGet;
    try {
      const port = resolvePort(g.port, t.container);
      const host = g.host || t.podIP;
      const scheme = (g.scheme ?? 'HTTP').toLowerCase();
      const p = g.path ?? '';
      const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${p.startsWith('/') ? p : `/${p}`}`;
      const headers = Object.fromEntries((g.httpHeaders ?? []).map((x) => [x.name, x.value]));
      await r.transport.httpGet(url, 30_000, headers);
    } catch (err) {
      throw new LifecycleHookError(`HTTP lifecycle hook (${g.path ?? ''}) for Container "${t.container.name}" in Pod "${formatPod(t.pod)}" failed - error: ${(err as Error).message}`);
    }
    return;
  }
  if (h.sleep) {
    await sleep(Math.max(0, h.sleep.seconds) * 1000, signal);
    return;
  }
  throw new LifecycleHookError(`Cannot run handler: invalid handler: ${JSON.stringify(h)}`);
}

/**
 * Runs a preStop hook for at most `graceSeconds` and returns the whole seconds it took (what the kubelet
 * takes off the grace period before StopContainer). A failing hook is reported through `onError`.
 */
export async function runPreStop(
  r: HookRunner,
  h: LifecycleHandler,
  t: HookTarget,
  graceSeconds: number,
  onError: (message: string) => void,
): Promise<number> {
  const started = Date.now();
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve();
    }, graceSeconds * 1000);
  });
  const hook = runLifecycleHandler(r, h, t, abort.signal).catch((err) => {
    if (err instanceof LifecycleHookError) onError(err.message);
    else onError(String(err));
  });
  await Promise.race([hook, deadline]);
  clearTimeout(timer);
  return Math.floor((Date.now() - started) / 1000);
}
