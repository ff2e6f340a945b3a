import { CsiError, codeName, internal } from './errors.js';

export interface CallLog {
  service: string;
  method: string;
  /** the ids the request names (volume, node, snapshot); never secrets or the whole request */
  subject: string;
  code: number;
  codeName: string;
  message: string;
  durationMs: number;
}

export type CallLogger = (entry: CallLog) => void;

/** One line per call on stderr: `CreateVolume volume=... OK 1.2ms`. Errors always; successes when verbose. */
export function stderrLogger(verbose: boolean): CallLogger {
  return (e) => {
    if (e.code === 0 && !verbose) return;
    const tail = e.code === 0 ? '' : `: ${e.message}`;
    process.stderr.write(
      `${new Date().toISOString()} ${e.service}/${e.method} ${e.subject} ${e.codeName} ${e.durationMs.toFixed(1)}ms${tail}\n`,
    );
  };
}

const SUBJECT_FIELDS = [
  'name',
  'volumeId',
  'nodeId',
  'snapshotId',
  'sourceVolumeId',
  'groupSnapshotId',
  'targetPath',
  'stagingTargetPath',
];

function subjectOf(req: unknown): string {
  if (!req || typeof req !== 'object') return '';
  const parts: string[] = [];
  for (const f of SUBJECT_FIELDS) {
    const v = (req as Record<string, unknown>)[f];
    if (typeof v === 'string' && v) parts.push(`${f}=${JSON.stringify(v)}`);
  }
  return parts.join(' ');
}

type AnyHandlers = Record<string, (req: any) => Promise<any>>;

/**
 * Wraps every method of a service object: errors that are not protocol errors become INTERNAL with their
 * message (never a stack, never a stray numeric `code` such as a child's exit status mistaken for a gRPC
 * status), and each call is timed and logged with its status — the equivalent of a unary server
 * interceptor, applied to in-process calls as well as socket calls.
 */
export function wrapService<T extends AnyHandlers>(service: string, handlers: T, logger?: CallLogger): T {
  const out: AnyHandlers = {};
  for (const [method, fn] of Object.entries(handlers)) {
    out[method] = async (req: unknown) => {
      const start = performance.now();
      try {
        const res = await fn(req ?? {});
        logger?.({
          service,
          method,
          subject: subjectOf(req),
          code: 0,
          codeName: 'OK',
          message: '',
          durationMs: performance.now() - start,
        });
        return res;
      } catch (e) {
        const err = e instanceof CsiError ? e : internal(`${method}: ${(e as Error)?.message ?? String(e)}`);
        logger?.({
          service,
          method,
          subject: subjectOf(req),
          code: err.code,
          codeName: codeName(err.code),
          message: err.message,
          durationMs: performance.now() - start,
        });
        throw err;
      }
    };
  }
  return out as T;
}
