// The device-plugin schema against protoc (an implementation nobody here wrote): what we encode, protoc
// decodes with the field names and numbers upstream uses, and the other way round.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { decode, deviceplugin, encode } from '@kemu/proto';
import { peers, requirePeers } from '@kemu/test-peers';
import { describe, expect, it } from 'vitest';

const protoDir = path.join(import.meta.dirname, '..', '..', '..', 'proto');
const ok = requirePeers('device-plugin wire format against protoc', [peers.protoc]);
const type = (name: string) => deviceplugin.root.lookupType(`v1beta1.${name}`);
const protoc = (args: string[], input: Buffer | string) =>
  execFileSync('protoc', [`--proto_path=${protoDir}`, ...args, 'deviceplugin/v1beta1/api.proto'], { input });

describe.runIf(ok)('device-plugin v1beta1 on the wire', () => {
  it('protoc decodes our RegisterRequest', () => {
    const bytes = encode(type('RegisterRequest'), {
      version: 'v1beta1',
      endpoint: 'nvidia.sock',
      resourceName: 'nvidia.com/gpu',
      options: { preStartRequired: true, getPreferredAllocationAvailable: true },
    });
    expect(protoc(['--decode=v1beta1.RegisterRequest'], bytes).toString()).toBe(
      'version: "v1beta1"\nendpoint: "nvidia.sock"\nresource_name: "nvidia.com/gpu"\noptions {\n  pre_start_required: true\n  get_preferred_allocation_available: true\n}\n',
    );
  });

  it('protoc decodes our AllocateResponse, maps and CDI devices included', () => {
    const bytes = encode(type('AllocateResponse'), {
      containerResponses: [
        {
          envs: { NVIDIA_VISIBLE_DEVICES: 'GPU-a,GPU-b' },
          mounts: [{ containerPath: '/usr/lib/x', hostPath: '/opt/x', readOnly: true }],
          devices: [{ containerPath: '/dev/nvidia0', hostPath: '/dev/nvidia0', permissions: 'rw' }],
          annotations: { 'cdi.k8s.io/x': 'y' },
          cdiDevices: [{ name: 'nvidia.com/gpu=0' }],
        },
      ],
    });
    expect(protoc(['--decode=v1beta1.AllocateResponse'], bytes).toString()).toBe(
      [
        'container_responses {',
        '  envs {',
        '    key: "NVIDIA_VISIBLE_DEVICES"',
        '    value: "GPU-a,GPU-b"',
        '  }',
        '  mounts {',
        '    container_path: "/usr/lib/x"',
        '    host_path: "/opt/x"',
        '    read_only: true',
        '  }',
        '  devices {',
        '    container_path: "/dev/nvidia0"',
        '    host_path: "/dev/nvidia0"',
        '    permissions: "rw"',
        '  }',
        '  annotations {',
        '    key: "cdi.k8s.io/x"',
        '    value: "y"',
        '  }',
        '  cdi_devices {',
        '    name: "nvidia.com/gpu=0"',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('we decode what protoc encodes (ListAndWatchResponse with topology, preferred allocation)', () => {
    const law = protoc(['--encode=v1beta1.ListAndWatchResponse'], 'devices { ID: "GPU-1" health: "Healthy" topology { nodes { ID: 1 } } }');
    expect(decode(type('ListAndWatchResponse'), law)).toEqual({ devices: [{ ID: 'GPU-1', health: 'Healthy', topology: { nodes: [{ ID: 1 }] } }] });
    const pref = protoc(
      ['--encode=v1beta1.PreferredAllocationRequest'],
      'container_requests { available_deviceIDs: "a" available_deviceIDs: "b" must_include_deviceIDs: "b" allocation_size: 2 }',
    );
    expect(decode(type('PreferredAllocationRequest'), pref)).toEqual({
      containerRequests: [{ availableDeviceIDs: ['a', 'b'], mustIncludeDeviceIDs: ['b'], allocationSize: 2 }],
    });
    const alloc = protoc(['--encode=v1beta1.AllocateRequest'], 'container_requests { devices_ids: "GPU-1" devices_ids: "GPU-2" }');
    expect(decode(type('AllocateRequest'), alloc)).toEqual({ containerRequests: [{ devicesIds: ['GPU-1', 'GPU-2'] }] });
  });
});
