// Checks of free-form request fields shared by the sandbox and container RPCs.
import { invalidArgument } from './errors.js';

const CONTROL = /[\u0000-\u001f\u007f]/;

export function checkText(value: string | undefined, what: string, required: boolean): string {
  if (!value) {
    if (required) throw invalidArgument(`${what} must not be empty`);
    return '';
  }
  if (CONTROL.test(value)) throw invalidArgument(`${what} ${JSON.stringify(value)} contains control characters`);
  return value;
}

export function checkMap(m: Record<string, string> | undefined, what: string) {
  for (const [k, v] of Object.entries(m ?? {})) {
    if (!k || k.includes('\0') || v.includes('\0')) throw invalidArgument(`${what} key/value ${JSON.stringify(k)} is invalid`);
  }
}
