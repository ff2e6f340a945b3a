// A request whose protobuf is malformed — above all a length prefix that runs past the end of the message —
// is refused by every method of every service, on both engines, with INTERNAL, as grpc-go and grpc-js answer
// a request that fails to deserialize. (protobufjs alone accepted a truncated string field, so some methods
// took such a request and others refused it.) The same request well-formed reaches the handler.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cri,
  csi,
  type GrpcEngine,
  type GrpcServer,
  grpc,
  implementService,
  pluginregistration,
  serveUnix,
  shutdownServer,
} from '../index';

const ROOTS: Record<string, protobuf.Root> = { cri: cri.root, csi: csi.root, pluginregistration: pluginregistration.root };
const SERVICES: [string, grpc.ServiceDefinition][] = [
  ['cri', cri.RuntimeServiceService],
  ['cri', cri.ImageServiceService],
  ['csi', csi.IdentityService],
  ['csi', csi.ControllerService],
  ['csi', csi.GroupControllerService],
  ['csi', csi.SnapshotMetadataService],
  ['csi', csi.NodeService],
  ['pluginregistration', pluginregistration.RegistrationService],
];

interface Case {
  method: string;
  what: string;
  bytes: Buffer;
}

/** The malformed requests for one method: universal ones, and one truncated inside a nested message. */
function casesFor(root: protobuf.Root, def: grpc.MethodDefinition<unknown, unknown>): Case[] {
  const service = def.path.split('/')[1]!;
  const method = root.lookupService(service).methods[def.path.split('/')[2]!]!;
  const type = method.resolvedRequestType!;
  const cases: Case[] = [
    // Field 1, length-delimited, 5 bytes announced, 1 present.
    { method: def.path, what: 'a length past the end of the message', bytes: Buffer.from([0x0a, 0x05, 0x61]) },
    { method: def.path, what: 'a tag cut in the middle of its varint', bytes: Buffer.from([0x80]) },
    { method: def.path, what: 'field number 0', bytes: Buffer.from([0x00, 0x01]) },
    { method: def.path, what: 'a 4-byte value with 2 bytes', bytes: Buffer.from([0x0d, 0x01, 0x02]) },
  ];
  const nested = type.fieldsArray.find((f) => f.resolvedType && 'fieldsArray' in f.resolvedType && !f.map);
  if (nested) {
    // The nested message is 3 bytes long; inside it, field 1 announces 5.
    const tag = (nested.id << 3) | 2;
    const tagBytes = tag < 0x80 ? [tag] : [(tag & 0x7f) | 0x80, tag >> 7];
    cases.push({
      method: def.path,
      what: `field ${nested.name} running past the end of its nested message`,
      bytes: Buffer.from([...tagBytes, 0x03, 0x0a, 0x05, 0x61, 0x62, 0x63, 0x64]),
    });
  }
  return cases;
}

function call(client: grpc.Client, method: string, bytes: Buffer): Promise<grpc.StatusObject> {
  return new Promise((resolve) => {
    const ident = (b: Buffer) => b;
    const c = client.makeUnaryRequest(method, ident, ident, bytes, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, () => {});
    c.on('status', resolve);
  });
}

for (const engine of ['http2', 'grpc-js'] as GrpcEngine[]) {
  describe(`malformed protobuf requests, ${engine} engine`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-bad-protobuf-${engine}-`));
    const sock = path.join(dir, 'all.sock');
    let server: GrpcServer;
    let client: grpc.Client;

    beforeAll(async () => {
      // No handlers: a request that deserializes reaches implementService's UNIMPLEMENTED answer.
      server = await serveUnix(SERVICES.map(([, def]) => [def, implementService(def as never, {})] as const), sock, { engine });
      client = new grpc.Client(`unix://${sock}`, grpc.credentials.createInsecure());
    });

    afterAll(async () => {
      client?.close();
      await shutdownServer(server, 1000);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    for (const [pkg, service] of SERVICES) {
      const name = Object.values(service)[0]!.path.split('/')[1]!;
      it(`${name}: every method refuses them INTERNAL and takes the empty request`, async () => {
        for (const def of Object.values(service)) {
          for (const c of casesFor(ROOTS[pkg]!, def)) {
            const st = await call(client, c.method, c.bytes);
            expect(st.code, `${c.method}: ${c.what}`).toBe(grpc.status.INTERNAL);
            expect(st.details, `${c.method}: ${c.what}`).toMatch(/deserializ/i);
          }
          const ok = await call(client, def.path, Buffer.alloc(0));
          expect(ok.code, def.path).toBe(grpc.status.UNIMPLEMENTED);
        }
      });
    }
  });
}
