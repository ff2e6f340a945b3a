// What a node registers its Node with, as the kubelet's flags give it: taints as kubectl taint and
// --register-with-taints write them (`key=value:Effect` or `key:Effect`, several separated by commas for the
// flag) and labels as --node-labels does (`key=value,...`).
import type { Taint, TaintEffect } from '@kemu/core';

const EFFECTS: TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
// A qualified name (optional DNS-subdomain prefix and '/'), and a label value, as kubectl taint checks them.
const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function qualifiedName(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : [undefined, key];
  if (prefix !== undefined && (!prefix || prefix.length > 253 || !PREFIX.test(prefix))) return false;
  return name.length <= 63 && NAME_PART.test(name);
}

/** A taint as kubectl taint writes one: `key=value:Effect` or `key:Effect`. */
export function parseTaint(spec: string): Taint {
  const colon = spec.lastIndexOf(':');
  if (colon < 0) throw new Error(`invalid taint spec: ${spec}: want key=value:Effect or key:Effect`);
  const effect = spec.slice(colon + 1);
  const kv = spec.slice(0, colon);
  const eq = kv.indexOf('=');
  const key = eq < 0 ? kv : kv.slice(0, eq);
  const value = eq < 0 ? undefined : kv.slice(eq + 1);
  if (!EFFECTS.includes(effect as TaintEffect))
    throw new Error(`invalid taint effect: ${effect}, unsupported taint effect (want ${EFFECTS.join(', ')})`);
  if (!qualifiedName(key)) throw new Error(`invalid taint key ${JSON.stringify(key)}: a qualified name (letters, digits, '-', '_', '.', with an optional DNS prefix and '/')`);
  if (value !== undefined && value !== '' && (value.length > 63 || !NAME_PART.test(value)))
    throw new Error(`invalid taint value ${JSON.stringify(value)}: at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit`);
  return { key, ...(value ? { value } : {}), effect: effect as TaintEffect };
}

/** A taint back in `key=value:Effect` form. */
export function formatTaint(t: Taint): string {
  return `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;
}

/** The kubelet's --register-with-taints list: taints separated by commas. */
export function parseTaintList(list: string): Taint[] {
  return list.split(',').filter((x) => x.trim()).map((x) => parseTaint(x.trim()));
}

/** The kubelet's --node-labels list: `key=value` pairs separated by commas. */
export function parseNodeLabels(list: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list.split(',').map((x) => x.trim()).filter(Boolean)) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    if (eq < 0 || !qualifiedName(key)) throw new Error(`invalid node label ${JSON.stringify(pair)}: want key=value with a qualified name as key`);
    if (value !== '' && (value.length > 63 || !NAME_PART.test(value))) throw new Error(`invalid node label value ${JSON.stringify(value)}: at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit`);
    out[key] = value;
  }
  return out;
}
