#!/usr/bin/env node
// Writes a kind-schema module (packages/core/src/schema/*.ts) for upstream message types, with the facts read
// from the kubectl binary itself: the protobuf descriptors its Go API packages register (field names, numbers,
// types, maps, repeated) and the struct tags its types carry (omitempty, patchStrategy, patchMergeKey,
// json:",inline"). What a binary cannot tell (list types, Go pointers, a tag shared by several types) is
// marked with a TODO comment to check against upstream's types.go; descriptions are left for you to write.
//
//   node tools/schema-gen/from-kubectl.mjs k8s.io.api.apps.v1 Deployment StatefulSet > packages/core/src/schema/apps-v1.ts
//
// The named messages and every message they reach in the same package are written; types of other packages
// must already be in the schema registry (or be generated into their own module first).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import zlib from 'node:zlib';

const require = createRequire(import.meta.url);
const descriptor = require('protobufjs/ext/descriptor');

const [pkg, ...roots] = process.argv.slice(2);
if (!pkg || !roots.length) {
  console.error('usage: from-kubectl.mjs <proto package, e.g. k8s.io.api.apps.v1> <Message>...');
  process.exit(2);
}
const kubectl = fs.realpathSync(execFileSync('sh', ['-c', 'command -v kubectl']).toString().trim());
const bin = fs.readFileSync(kubectl);

// Go's gzip'd FileDescriptorProtos, as gogo-protobuf registers them.
const messages = new Map();
for (let i = bin.indexOf(Buffer.from([0x1f, 0x8b, 0x08])); i >= 0; i = bin.indexOf(Buffer.from([0x1f, 0x8b, 0x08]), i + 3)) {
  try {
    const raw = zlib.gunzipSync(bin.subarray(i, i + 400000), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    const fd = descriptor.FileDescriptorProto.toObject(descriptor.FileDescriptorProto.decode(raw), { enums: String });
    if (!fd.name?.endsWith('generated.proto')) continue;
    for (const m of fd.messageType ?? []) messages.set(`${fd.package}.${m.name}`, m);
  } catch {
    // not a descriptor
  }
}
// Struct tags (`json:"..." protobuf:"..." patchStrategy:"..."`), in any order.
const tags = [...new Set(bin.toString('latin1').match(/json:"[^"]*"(?: [a-zA-Z]+:"[^"]*")+/g) ?? [])].filter((t) => t.includes('protobuf:"'));

const FORMAT = {
  'k8s.io.apimachinery.pkg.api.resource.Quantity': 'quantity',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Time': 'time',
  'k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime': 'microTime',
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': 'intOrString',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Duration': 'duration',
  'k8s.io.apimachinery.pkg.runtime.RawExtension': 'rawExtension',
  'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1': 'fieldsV1',
};
const PRIM = { TYPE_STRING: 'string', TYPE_BYTES: 'bytes', TYPE_BOOL: 'bool', TYPE_INT32: 'int32', TYPE_INT64: 'int64', TYPE_DOUBLE: 'double' };
const openapiName = (full) => full.replace(/^k8s\.io\./, 'io.k8s.');
const q = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function tagInfo(f) {
  const re = new RegExp(`protobuf:"(bytes|varint|fixed64),${f.number},(rep|opt|req)[^"]*name=${f.name}[,"]`);
  const found = tags.filter((t) => re.test(t));
  const info = {};
  const notes = [];
  if (!found.length) return { info, notes };
  const omit = found.map((t) => /json:"[^"]*,omitempty"/.test(t));
  if (omit.every((x) => !x)) info.required = true;
  else if (omit.some((x) => !x)) notes.push('required?');
  if (found.some((t) => /json:",inline"/.test(t))) info.inline = true;
  const ps = new Set(found.map((t) => /patchStrategy:"([^"]*)"/.exec(t)?.[1]));
  const pk = new Set(found.map((t) => /patchMergeKey:"([^"]*)"/.exec(t)?.[1]));
  if (ps.size === 1 && [...ps][0]) info.patchStrategy = [...ps][0];
  else if (ps.size > 1) notes.push(`patchStrategy one of ${[...ps].map(String).join('|')}?`);
  if (info.patchStrategy && pk.size === 1 && [...pk][0]) info.patchMergeKey = [...pk][0];
  return { info, notes };
}

function typeExpr(m, mname, f, outPkg) {
  if (f.type === 'TYPE_MESSAGE') {
    const tn = f.typeName.slice(1);
    const entry = (m.nestedType ?? []).find((x) => `${mname}.${x.name}` === tn && x.options?.mapEntry);
    if (entry) return `map[string]${typeExpr(entry, tn, entry.field.find((x) => x.number === 2), outPkg)}`;
    const t = FORMAT[tn] ?? (tn.startsWith(`${outPkg}.`) && !tn.slice(outPkg.length + 1).includes('.') ? tn.slice(outPkg.length + 1) : `@${openapiName(tn)}`);
    return (f.label === 'LABEL_REPEATED' ? '[]' : '') + t;
  }
  return (f.label === 'LABEL_REPEATED' ? '[]' : '') + PRIM[f.type];
}

// Types of this package that schema modules already define are referenced, not written again.
const schemaDir = new URL('../../packages/core/src/schema/', import.meta.url);
const existing = new Set();
for (const file of fs.readdirSync(schemaDir).filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))) {
  const src = fs.readFileSync(new URL(file, schemaDir), 'utf8');
  if (!src.includes(`'${openapiName(pkg)}'`)) continue;
  for (const m of src.matchAll(/^ {4}([A-Z][A-Za-z0-9]*): type\(/gm)) existing.add(m[1]);
}

// The closure of the roots inside the package.
const order = [];
const seen = new Set();
const visit = (name) => {
  const full = `${pkg}.${name}`;
  if (seen.has(full) || (existing.has(name) && !roots.includes(name))) return;
  const m = messages.get(full);
  if (!m) throw new Error(`kubectl has no message ${full}`);
  seen.add(full);
  order.push(name);
  for (const f of m.field ?? []) {
    if (f.type !== 'TYPE_MESSAGE') continue;
    const tn = f.typeName.slice(1);
    const entry = (m.nestedType ?? []).find((x) => `${full}.${x.name}` === tn);
    const target = entry ? entry.field.find((x) => x.number === 2).typeName?.slice(1) : tn;
    if (target?.startsWith(`${pkg}.`) && !target.slice(pkg.length + 1).includes('.')) visit(target.slice(pkg.length + 1));
  }
};
roots.forEach(visit);

let body = '';
for (const name of order) {
  const m = messages.get(`${pkg}.${name}`);
  body += `    ${name}: type('', {\n`;
  for (const f of m.field ?? []) {
    const te = typeExpr(m, `${pkg}.${name}`, f, pkg);
    const { info, notes } = tagInfo(f);
    if (te.startsWith('[]') && !info.patchStrategy) notes.push('listType?');
    if (['int32', 'int64', 'bool'].includes(te) && !info.required) notes.push('pointer?');
    const opts = Object.entries(info).map(([k, v]) => `${k}: ${typeof v === 'string' ? q(v) : JSON.stringify(v)}`);
    const texpr = te.includes('@') ? `\`${te.replace('@io.k8s.apimachinery.pkg.apis.meta.v1.', '${META}').replace('@', '')}\`` : q(te);
    const line = `      ${f.name}: f(${f.number}, ${texpr}${opts.length ? `, '', { ${opts.join(', ')} }` : ''}),`;
    body += notes.length ? `${line} // TODO: ${notes.join(' ')}\n` : `${line}\n`;
  }
  body += '    }),\n';
}
const group = pkg.replace(/^k8s\.io\.api\./, '').split('.');
const apiVersion = group[0] === 'core' ? group[1] : `${group[0]}${group[0].includes('.') ? '' : '.k8s.io'}/${group[1]}`.replace(/^(apps|batch|policy|autoscaling)\.k8s\.io/, '$1');
process.stdout.write(`// Schema of ${pkg.replace(/^k8s\.io\.api\./, '')}: ${roots.join(', ')}. Facts from upstream's API as kubectl 1.32 carries it.
import { ${body.includes('${META}') ? 'META, ' : ''}f, schemaModule, type } from './dsl.js';

export default schemaModule(
  '${openapiName(pkg)}',
  {
${body.trimEnd()}
  },
  [
${roots
  .filter((r) => (messages.get(`${pkg}.${r}`).field ?? []).some((f) => f.name === 'metadata' && f.number === 1))
  .map((r) => `    { kind: '${r}', apiVersion: '${apiVersion}', type: '${r}' },`)
  .join('\n')}
  ],
);
`);
