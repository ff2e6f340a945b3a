// Streaming RPCs: ExecSync runs to completion; Exec, Attach and PortForward register a session with the
// streaming server, which opens it through the backend once the client connects.
import { cri } from '@kemu/proto';
import { containerStateEnum } from './convert.js';
import { deadlineExceeded, failedPrecondition, invalidArgument } from './errors.js';
import type { RuntimeContext, StreamingRegistry } from './runtime-context.js';
import type { ContainerRecord, ExecOptions, SandboxRecord, StreamSession } from './types.js';

export function runningContainer(ctx: RuntimeContext, id: string | undefined): { c: ContainerRecord; sb: SandboxRecord } {
  const c = ctx.getContainer(id);
  if (c.state !== 'running') throw failedPrecondition(`container ${JSON.stringify(c.id)} is not running (state ${cri.ContainerState[containerStateEnum[c.state]]})`);
  return { c, sb: ctx.getSandbox(c.sandboxId) };
}

export async function execSync(ctx: RuntimeContext, req: cri.ExecSyncRequest): Promise<cri.ExecSyncResponse> {
  const cmd = req.cmd ?? [];
  if (cmd.length === 0 || !cmd[0]) throw invalidArgument('exec command must not be empty');
  if (cmd.some((a) => a.includes('\0'))) throw invalidArgument('exec command arguments must not contain NUL');
  const timeout = req.timeout ?? 0;
  if (timeout < 0) throw invalidArgument(`timeout ${timeout} must not be negative`);
  const { c, sb } = runningContainer(ctx, req.containerId);
  const res = await ctx.backend.execSync(sb, c, cmd, timeout > 0 ? timeout * 1000 : 0);
  if (res.exitCode === -1) throw deadlineExceeded(`command ${JSON.stringify(cmd)} timed out after ${timeout}s`);
  return { stdout: res.stdout, stderr: res.stderr, exitCode: res.exitCode };
}

function needStreaming(ctx: RuntimeContext): StreamingRegistry {
  if (!ctx.streaming) throw failedPrecondition('the streaming server is not running');
  return ctx.streaming;
}

export function exec(ctx: RuntimeContext, req: cri.ExecRequest): cri.ExecResponse {
  const cmd = req.cmd ?? [];
  if (cmd.length === 0 || !cmd[0]) throw invalidArgument('exec command must not be empty');
  if (!req.stdin && !req.stdout && !req.stderr) throw invalidArgument('one of stdin, stdout, or stderr must be set');
  if (req.tty && req.stderr) throw invalidArgument('tty and stderr cannot both be true');
  const { c } = runningContainer(ctx, req.containerId);
  const opts: ExecOptions = { tty: !!req.tty, stdin: !!req.stdin, stdout: !!req.stdout, stderr: !!req.stderr };
  return { url: needStreaming(ctx).register('exec', { kind: 'exec', containerId: c.id, cmd, opts }) };
}

export function attach(ctx: RuntimeContext, req: cri.AttachRequest): cri.AttachResponse {
  if (!req.stdin && !req.stdout && !req.stderr) throw invalidArgument('one of stdin, stdout, or stderr must be set');
  if (req.tty && req.stderr) throw invalidArgument('tty and stderr cannot both be true');
  const { c } = runningContainer(ctx, req.containerId);
  const opts: ExecOptions = { tty: !!req.tty, stdin: !!req.stdin, stdout: !!req.stdout, stderr: !!req.stderr };
  return { url: needStreaming(ctx).register('attach', { kind: 'attach', containerId: c.id, opts }) };
}

export function portForward(ctx: RuntimeContext, req: cri.PortForwardRequest): cri.PortForwardResponse {
  for (const p of req.port ?? []) if (p < 1 || p > 65535) throw invalidArgument(`port ${p} is out of range 1-65535`);
  const sb = ctx.getSandbox(req.podSandboxId);
  if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} is not ready`);
  return { url: needStreaming(ctx).register('portforward', { kind: 'portforward', sandboxId: sb.id, ports: req.port ?? [] }) };
}

/** Used by the streaming server once a client connects with a valid token. */
export function openExec(ctx: RuntimeContext, containerId: string, cmd: string[], opts: ExecOptions): StreamSession {
  const { c, sb } = runningContainer(ctx, containerId);
  return ctx.backend.exec(sb, c, cmd, opts);
}

export function openAttach(ctx: RuntimeContext, containerId: string, opts: ExecOptions): StreamSession {
  const { c, sb } = runningContainer(ctx, containerId);
  return ctx.backend.attach(sb, c, opts);
}

export function openPortForward(ctx: RuntimeContext, sandboxId: string, port: number) {
  const sb = ctx.getSandbox(sandboxId);
  if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} is not ready`);
  return ctx.backend.portForward(sb, port);
}
