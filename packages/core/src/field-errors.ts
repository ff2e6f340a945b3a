// Field errors as the API server words them: `<path>: Required value`, `<path>: Invalid value: "x": why`.
import type { CauseType, StatusCause } from './errors.js';

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (v === undefined) return '"null"';
  return JSON.stringify(v);
}

/** Collects field errors while walking an object. */
export class FieldErrors {
  readonly list: StatusCause[] = [];

  private push(field: string, type: CauseType, message: string): void {
    this.list.push({ field, type, message });
  }

  required(field: string, detail = ''): void {
    this.push(field, 'FieldValueRequired', detail ? `Required value: ${detail}` : 'Required value');
  }

  invalid(field: string, value: unknown, detail: string): void {
    this.push(field, 'FieldValueInvalid', `Invalid value: ${show(value)}${detail ? `: ${detail}` : ''}`);
  }

  notSupported(field: string, value: unknown, valid: readonly string[]): void {
    this.push(
      field,
      'FieldValueNotSupported',
      `Unsupported value: ${show(value)}: supported values: ${valid.map((v) => `"${v}"`).join(', ')}`,
    );
  }

  duplicate(field: string, value: unknown): void {
    this.push(field, 'FieldValueDuplicate', `Duplicate value: ${show(value)}`);
  }

  forbidden(field: string, detail: string): void {
    this.push(field, 'FieldValueForbidden', `Forbidden: ${detail}`);
  }

  notFound(field: string, value: unknown): void {
    this.push(field, 'FieldValueNotFound', `Not found: ${show(value)}`);
  }

  tooLong(field: string, max: number): void {
    this.push(field, 'FieldValueTooLong', `Too long: may not be more than ${max} bytes`);
  }

  tooMany(field: string, actual: number, max: number): void {
    this.push(field, 'FieldValueTooMany', `Too many: ${actual}: must have at most ${max} items`);
  }

  /** Record each message of a name check (dns1123Label etc.) as Invalid. */
  check(field: string, value: string, problems: string[]): void {
    for (const p of problems) this.invalid(field, value, p);
  }

  get ok(): boolean {
    return this.list.length === 0;
  }
}
