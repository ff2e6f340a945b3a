// Liveness, readiness and startup probes with the upstream defaults (period 10 s, timeout 1 s, success
// threshold 1, failure threshold 3, no initial delay). exec probes run through CRI ExecSync; httpGet and
// tcpSocket go through a ProbeTransport (real sockets by default).
import http from 'node:http';
import net from 'node:net';
import type { Container, Pod, Probe } from '@kemu/core';
import type { ProbeTransport, RuntimeApi } from './types.js';

export type ProbeKind = 'liveness' | 'readiness' | 'startup';

export const realProbeTransport: ProbeTransport = {
  httpGet(url, timeoutMs, headers) {
    return new Promise((resolve, reject) => {
      const req = http.get(url, { timeout: timeoutMs, headers: { 'User-Agent': 'kube-probe/1.34', ...headers } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('timeout', () => req.destroy(new Error(`probe timed out after ${timeoutMs}ms`)));
      req.on('error', reject);
    });
  },
  tcpConnect(host, port, timeoutMs) {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host, port, timeout: timeoutMs });
      sock.once('connect', () => {
        sock.destroy();
        resolve();
      });
      sock.once('timeout', () => sock.destroy(new Error(`dial tcp ${host}:${port}: i/o timeout`)));
      sock.once('error', reject);
    });
  },
};

interface Worker {
  podUid: string;
  containerId: string;
  kind: ProbeKind;
  probe: Probe;
  timer?: NodeJS.Timeout;
  successes: number;
  failures: number;
  /** Current result: undefined until the first decisive outcome. */
  result?: boolean;
  lastMessage?: string;
  stopped: boolean;
}

export interface ProbeTarget {
  pod: Pod;
  container: Container;
  containerId: string;
  podIP: string;
}

export class ProbeManager {
  private workers = new Map<string, Worker>();

  constructor(
    private readonly runtime: RuntimeApi,
    private readonly transport: ProbeTransport,
    /** Called whenever a probe result flips, so the pod gets synced. */
    private readonly onChange: (podUid: string, containerId: string, kind: ProbeKind, ok: boolean, message: string) => void,
  ) {}

  /** Starts the probes a container declares (idempotent per container id). */
  add(target: ProbeTarget): void {
    const { container, containerId, pod } = target;
    for (const [kind, probe] of [
      ['startup', container.startupProbe],
      ['liveness', container.livenessProbe],
      ['readiness', container.readinessProbe],
    ] as const) {
      if (!probe) continue;
      const key = `${containerId}/${kind}`;
      if (this.workers.has(key)) continue;
      const w: Worker = { podUid: pod.metadata.uid ?? '', containerId, kind, probe, successes: 0, failures: 0, stopped: false };
      this.workers.set(key, w);
      this.schedule(w, target, (probe.initialDelaySeconds ?? 0) * 1000);
    }
  }

  removeContainer(containerId: string): void {
    for (const kind of ['startup', 'liveness', 'readiness'] as const) {
      const key = `${containerId}/${kind}`;
      const w = this.workers.get(key);
      if (!w) continue;
      w.stopped = true;
      if (w.timer) clearTimeout(w.timer);
      this.workers.delete(key);
    }
  }

  removePod(podUid: string): void {
    for (const w of [...this.workers.values()]) if (w.podUid === podUid) this.removeContainer(w.containerId);
  }

  stopAll(): void {
    for (const w of this.workers.values()) {
      w.stopped = true;
      if (w.timer) clearTimeout(w.timer);
    }
    this.workers.clear();
  }

  /** Readiness: true without a readiness probe; otherwise the probe's verdict (false until it succeeds). */
  ready(containerId: string, container: Container): boolean {
    if (!container.readinessProbe) return this.started(containerId, container);
    return this.started(containerId, container) && this.workers.get(`${containerId}/readiness`)?.result === true;
  }

  /** Startup: true without a startup probe; otherwise once it has succeeded. */
  started(containerId: string, container: Container): boolean {
    if (!container.startupProbe) return true;
    return this.workers.get(`${containerId}/startup`)?.result === true;
  }

  /** Whether liveness (or startup) has failed past its threshold: the container must be restarted. */
  failed(containerId: string): { kind: ProbeKind; message: string } | undefined {
    for (const kind of ['startup', 'liveness'] as const) {
      const w = this.workers.get(`${containerId}/${kind}`);
      if (w?.result === false) return { kind, message: w.lastMessage ?? '' };
    }
    return undefined;
  }

  private schedule(w: Worker, target: ProbeTarget, delayMs: number) {
    if (w.stopped) return;
    w.timer = setTimeout(() => void this.run(w, target), delayMs);
    w.timer.unref?.();
  }

  private async run(w: Worker, target: ProbeTarget) {
    if (w.stopped) return;
    // Liveness and readiness wait for the startup probe to succeed, as upstream.
    if (w.kind !== 'startup' && target.container.startupProbe && !this.started(w.containerId, target.container)) {
      this.schedule(w, target, (w.probe.periodSeconds ?? 10) * 1000);
      return;
    }
    const { ok, message } = await this.execute(w.probe, target);
    if (w.stopped) return;
    const successThreshold = w.probe.successThreshold ?? 1;
    const failureThreshold = w.probe.failureThreshold ?? 3;
    if (ok) {
      w.successes++;
      w.failures = 0;
    } else {
      w.failures++;
      w.successes = 0;
      w.lastMessage = message;
    }
    let next = w.result;
    if (ok && w.successes >= successThreshold) next = true;
    if (!ok && w.failures >= failureThreshold) next = false;
    if (next !== w.result) {
      w.result = next;
      this.onChange(w.podUid, w.containerId, w.kind, next === true, message);
    }
    // A startup probe stops once it succeeds.
    if (w.kind === 'startup' && w.result === true) return;
    this.schedule(w, target, (w.probe.periodSeconds ?? 10) * 1000);
  }

  private async execute(probe: Probe, t: ProbeTarget): Promise<{ ok: boolean; message: string }> {
    const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
    try {
      if (probe.exec) {
        const res = await this.runtime.ExecSync({ containerId: t.containerId, cmd: probe.exec.command ?? [], timeout: probe.timeoutSeconds ?? 1 });
        const out = Buffer.from(res.stdout ?? []).toString() + Buffer.from(res.stderr ?? []).toString();
        return res.exitCode === 0
          ? { ok: true, message: '' }
          : { ok: false, message: `command ${JSON.stringify(probe.exec.command ?? [])} exited with ${res.exitCode}: ${out.trim()}` };
      }
      if (probe.httpGet) {
        const port = resolvePort(probe.httpGet.port, t.container);
        const host = probe.httpGet.host || t.podIP;
        const scheme = (probe.httpGet.scheme ?? 'HTTP').toLowerCase();
        const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${probe.httpGet.path ?? '/'}`;
        const code = await this.transport.httpGet(url, timeoutMs);
        return code >= 200 && code < 400 ? { ok: true, message: '' } : { ok: false, message: `HTTP probe failed with statuscode: ${code}` };
      }
      if (probe.tcpSocket) {
        const port = resolvePort(probe.tcpSocket.port, t.container);
        await this.transport.tcpConnect(probe.tcpSocket.host || t.podIP, port, timeoutMs);
        return { ok: true, message: '' };
      }
      return { ok: false, message: 'probe has no handler' };
    } catch (err) {
      return { ok: false, message: err instanceof Error ? err.message : String(err) };
    }
  }
}

/** A probe or hook port: a number, or the name of one of the container's ports. */
export function resolvePort(port: number | string, container: Container): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  if (!named) throw new Error(`unable to find port "${port}" in container ${container.name}`);
  return named.containerPort;
}
