// An independent view of our schemas for the wire tests: protobufjs reflection parsed straight from the
// .proto files with the original snake_case names, sharing nothing with the generated modules.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
export const protoDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../proto');
const wellKnownDir = path.join(path.dirname(require.resolve('protobufjs/package.json')), 'google', 'protobuf');

export function loadIndependent(file: string): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    if (target.startsWith('google/protobuf/')) {
      const name = target.slice('google/protobuf/'.length);
      return name === 'descriptor.proto' ? path.join(wellKnownDir, name) : target;
    }
    return path.isAbsolute(target) ? target : path.join(protoDir, target);
  };
  root.loadSync(path.join(protoDir, file), { keepCase: true });
  root.resolveAll();
  return root;
}

/**
 * Builds a message with every field set to a value derived from its field number, so a mix-up of
 * numbers, types or names anywhere shows up as a mismatch. Only the first member of each oneof is set.
 */
export function sample(type: protobuf.Type, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const skipped = new Set<protobuf.Field>();
  for (const oneof of type.oneofsArray) for (const f of oneof.fieldsArray.slice(1)) skipped.add(f);
  for (const field of type.fieldsArray) {
    if (skipped.has(field)) continue;
    const one = () => scalar(field, depth);
    if (field.resolvedType instanceof protobuf.Type && depth >= 3) continue;
    if (field.map) out[field.name] = { [`k${field.id}`]: one() };
    else if (field.repeated) out[field.name] = [one(), one()];
    else out[field.name] = one();
  }
  return out;
}

function scalar(field: protobuf.Field, depth: number): unknown {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Enum) {
    const values = Object.values(rt.values);
    return values[values.length - 1];
  }
  if (rt instanceof protobuf.Type) return sample(rt, depth + 1);
  switch (field.type) {
    case 'string':
      return `s${field.id}-${field.name}`;
    case 'bool':
      return true;
    case 'bytes':
      return Buffer.from([field.id & 0xff, 0, 255]);
    case 'double':
    case 'float':
      return field.id + 0.5;
    case 'int32':
    case 'sint32':
    case 'sfixed32':
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      return -(field.id * 1000 + 7);
    default:
      return field.id * 100_003;
  }
}

/** Converts a decoded generated-style object (camelCase) to the independent (snake_case) shape by field number. */
export function toIndependentShape(type: protobuf.Type, generatedType: protobuf.Type, value: any): any {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const genField = generatedType.fieldsById[field.id];
    if (!genField) throw new Error(`${type.fullName}: generated code lacks field number ${field.id}`);
    const v = value[genField.name];
    // proto3 cannot tell an empty list or map from an absent one: neither is on the wire.
    if (v === null || v === undefined) continue;
    if (field.repeated && Array.isArray(v) && v.length === 0) continue;
    if (field.map && Object.keys(v).length === 0) continue;
    const rt = field.resolvedType;
    const grt = genField.resolvedType;
    const conv = (x: unknown) => (rt instanceof protobuf.Type ? toIndependentShape(rt, grt as protobuf.Type, x) : x);
    if (field.map) out[field.name] = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, conv(x)]));
    else if (field.repeated) out[field.name] = (v as unknown[]).map(conv);
    else out[field.name] = conv(v);
  }
  return out;
}
