// Plugin result codes (framework.Code) and the Status value returned by every extension point.

export enum Code {
  Success = 0,
  Error = 1,
  Unschedulable = 2,
  UnschedulableAndUnresolvable = 3,
  Wait = 4,
  Skip = 5,
  Pending = 6,
}

export const codeName: Record<Code, string> = {
  [Code.Success]: 'Success',
  [Code.Error]: 'Error',
  [Code.Unschedulable]: 'Unschedulable',
  [Code.UnschedulableAndUnresolvable]: 'UnschedulableAndUnresolvable',
  [Code.Wait]: 'Wait',
  [Code.Skip]: 'Skip',
  [Code.Pending]: 'Pending',
};

export class Status {
  code: Code;
  reasons: string[];
  /** The plugin that produced this status (filled by the framework). */
  plugin: string;

  constructor(code: Code, ...reasons: string[]) {
    this.code = code;
    this.reasons = reasons;
    this.plugin = '';
  }

  static error(err: unknown, plugin = ''): Status {
    const s = new Status(Code.Error, err instanceof Error ? err.message : String(err));
    s.plugin = plugin;
    return s;
  }

  static unschedulable(...reasons: string[]): Status {
    return new Status(Code.Unschedulable, ...reasons);
  }

  static unresolvable(...reasons: string[]): Status {
    return new Status(Code.UnschedulableAndUnresolvable, ...reasons);
  }

  static skip(): Status {
    return new Status(Code.Skip);
  }

  get message(): string {
    return this.reasons.join(', ');
  }

  isRejected(): boolean {
    return (
      this.code === Code.Unschedulable ||
      this.code === Code.UnschedulableAndUnresolvable ||
      this.code === Code.Pending
    );
  }

  withPlugin(name: string): Status {
    this.plugin = name;
    return this;
  }
}

/** null stands for Success everywhere: the hot paths (Filter, Score) allocate nothing on success. */
export type MaybeStatus = Status | null;

export function isSuccess(s: MaybeStatus): boolean {
  return s === null || s.code === Code.Success;
}
