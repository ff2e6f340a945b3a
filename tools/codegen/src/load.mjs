import { createRequire } from 'node:module';
import path from 'node:path';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
// protobufjs ships descriptor.proto; the other well-known types (timestamp, wrappers) are built in.
const wellKnownDir = path.join(path.dirname(require.resolve('protobufjs/package.json')), 'google', 'protobuf');

/** Parses one of our .proto files (and its imports) into a resolved protobufjs Root. */
export function loadProto(protoDir, file, { keepCase = false } = {}) {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    if (target.startsWith('google/protobuf/')) {
      const name = target.slice('google/protobuf/'.length);
      if (name in protobuf.common || `google/protobuf/${name}` in protobuf.common) return target;
      return path.join(wellKnownDir, name);
    }
    if (path.isAbsolute(target)) return target;
    return path.join(protoDir, target);
  };
  root.loadSync(path.join(protoDir, file), { keepCase });
  root.resolveAll();
  return root;
}
