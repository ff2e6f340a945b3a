// Every request and response of every RPC is encoded by the generated service definition and decoded by
// an independent reader of the .proto files (and the other way round); the values must survive exactly.
import type protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { cri, csi, pluginregistration } from '../index';
import { loadIndependent, sample, toIndependentShape } from './independent';

const apis = [
  { name: 'cri', file: 'cri/runtime/v1/api.proto', mod: cri as any, services: ['RuntimeService', 'ImageService'], pkg: 'runtime.v1' },
  {
    name: 'csi',
    file: 'csi/v1/csi.proto',
    mod: csi as any,
    services: ['Identity', 'Controller', 'GroupController', 'Node', 'SnapshotMetadata'],
    pkg: 'csi.v1',
  },
  { name: 'pluginregistration', file: 'pluginregistration/api.proto', mod: pluginregistration as any, services: ['Registration'], pkg: 'pluginregistration' },
];

const decodeOpts = { longs: Number, enums: Number, bytes: Buffer as any, defaults: false, arrays: false, objects: false, oneofs: false };

describe.each(apis)('$name wire compatibility', ({ file, mod, services, pkg }) => {
  const indep = loadIndependent(file);
  for (const svcName of services) {
    const svc = indep.lookupService(`${pkg}.${svcName}`);
    const def = mod[`${svcName}Service`];
    for (const method of svc.methodsArray) {
      it(`${svcName}/${method.name}: request and response round-trip through an independent decoder`, () => {
        for (const [indepType, serialize, deserialize] of [
          [method.resolvedRequestType!, def[method.name].requestSerialize, def[method.name].requestDeserialize],
          [method.resolvedResponseType!, def[method.name].responseSerialize, def[method.name].responseDeserialize],
        ] as const) {
          const genType = mod.root.lookupType(indepType.fullName) as protobuf.Type;
          // generated -> independent
          const value = sample(genType);
          const bytes: Buffer = serialize(value);
          const seen = indepType.toObject(indepType.decode(bytes), decodeOpts);
          expect(seen).toEqual(toIndependentShape(indepType, genType, value));
          // independent -> generated
          const indepValue = sample(indepType);
          const indepBytes = indepType.encode(indepType.fromObject(indepValue)).finish();
          const decoded = deserialize(Buffer.from(indepBytes));
          expect(toIndependentShape(indepType, genType, decoded)).toEqual(
            indepType.toObject(indepType.decode(indepBytes), decodeOpts),
          );
        }
      });
    }
  }
});
