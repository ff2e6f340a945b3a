// Byte-level fixtures derived by hand from the protobuf encoding rules (tag = field_number << 3 | wire_type;
// varints little-endian base 128; length-delimited strings, sub-messages and map entries) and the field
// numbers in the upstream specs. They pin the generated encoders to the exact wire form.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { cri, csi, pluginregistration } from '../index';
import { protoDir } from './independent';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const enc = (def: any, rpc: string, which: 'request' | 'response', value: object) =>
  hex(def[rpc][which === 'request' ? 'requestSerialize' : 'responseSerialize'](value));

describe('CRI runtime.v1 fixtures', () => {
  it('VersionRequest{version:"v1"} is field 1, length 2', () => {
    expect(enc(cri.RuntimeServiceService, 'Version', 'request', { version: 'v1' })).toBe('0a027631');
  });

  it('StopContainerRequest carries the timeout as a varint in field 2', () => {
    // 300 = 0b1_0010_1100 -> 0xac 0x02
    expect(enc(cri.RuntimeServiceService, 'StopContainer', 'request', { containerId: 'c', timeout: 300 })).toBe(
      '0a016310ac02',
    );
  });

  it('RunPodSandboxRequest nests metadata (field 1 of config) and encodes labels as map entries (field 6)', () => {
    const bytes = enc(cri.RuntimeServiceService, 'RunPodSandbox', 'request', {
      config: { metadata: { name: 'web', uid: 'u', namespace: 'ns', attempt: 3 }, labels: { a: 'b' } },
      runtimeHandler: 'rh',
    });
    const metadata = '0a03776562' + '120175' + '1a026e73' + '2003'; // name=1 uid=2 namespace=3 attempt=4
    const labels = '3206' + '0a0161' + '120162'; // entry{key=1,value=2}
    const config = `0a${(metadata.length / 2).toString(16).padStart(2, '0')}${metadata}${labels}`;
    expect(bytes).toBe(`0a${(config.length / 2).toString(16).padStart(2, '0')}${config}12027268`);
  });

  it('ContainerFilter state is a wrapped enum: CONTAINER_EXITED = 2', () => {
    expect(
      enc(cri.RuntimeServiceService, 'ListContainers', 'request', {
        filter: { state: { state: cri.ContainerState.CONTAINER_EXITED } },
      }),
    ).toBe('0a04' + '12020802');
  });

  it('decodes a hand-written ListContainersResponse', () => {
    // containers[0] = { id: "x" (1), pod_sandbox_id: "p" (2), state: CONTAINER_RUNNING (6) = 1 }
    const bytes = Buffer.from('0a08' + '0a0178' + '120170' + '3001', 'hex');
    const res = cri.RuntimeServiceService.ListContainers.responseDeserialize(bytes);
    expect(res.containers?.[0]).toMatchObject({ id: 'x', podSandboxId: 'p', state: cri.ContainerState.CONTAINER_RUNNING });
  });
});

describe('CSI csi.v1 fixtures', () => {
  it('NodePublishVolumeRequest: volume_id=1, target_path=4, readonly=6', () => {
    expect(
      enc(csi.NodeService, 'NodePublishVolume', 'request', { volumeId: 'v', targetPath: '/t', readonly: true }),
    ).toBe('0a0176' + '22022f74' + '3001');
  });

  it('CreateVolumeRequest: capacity_range=2 (required_bytes=1 as varint of 1 GiB), volume_capabilities=3 with the mount oneof', () => {
    const bytes = enc(csi.ControllerService, 'CreateVolume', 'request', {
      name: 'n',
      capacityRange: { requiredBytes: 1024 ** 3 },
      volumeCapabilities: [
        { mount: { fsType: 'ext4' }, accessMode: { mode: csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER } },
      ],
    });
    const capacity = '1206' + '088080808004'; // required_bytes 2^30 -> 80 80 80 80 04
    const capability = '1a0c' + '1206' + '0a0465787434' + '1a020801'; // mount{fs_type} + access_mode{mode}
    expect(bytes).toBe('0a016e' + capacity + capability);
  });

  it('decodes a VolumeCapability with the block member of the access_type oneof', () => {
    // volume_capabilities[0] = { block: {} (1), access_mode: { mode: MULTI_NODE_MULTI_WRITER = 5 } (3) }
    // volume_id=1, volume_capabilities=3
    const bytes = Buffer.from('0a0176' + '1a06' + '0a00' + '1a020805', 'hex');
    const req = csi.ControllerService.ValidateVolumeCapabilities.requestDeserialize(bytes);
    expect(req.volumeId).toBe('v');
    expect(req.volumeCapabilities?.[0].accessType).toBe('block');
    expect(req.volumeCapabilities?.[0].accessMode?.mode).toBe(csi.VolumeCapability_AccessMode_Mode.MULTI_NODE_MULTI_WRITER);
  });
});

describe('pluginregistration fixtures', () => {
  it('PluginInfo: type=1 name=2 endpoint=3 supported_versions=4', () => {
    expect(
      enc(pluginregistration.RegistrationService, 'GetInfo', 'response', {
        type: 'CSIPlugin',
        name: 'x',
        endpoint: '/e',
        supportedVersions: ['1.0.0'],
      }),
    ).toBe(`0a09${Buffer.from('CSIPlugin').toString('hex')}120178` + '1a022f65' + `2205${Buffer.from('1.0.0').toString('hex')}`);
  });

  it('RegistrationStatus: plugin_registered=1, error=2', () => {
    expect(
      enc(pluginregistration.RegistrationService, 'NotifyRegistrationStatus', 'request', {
        pluginRegistered: false,
        error: 'no',
      }),
    ).toBe('12026e6f');
  });
});

// protoc (Debian protobuf-compiler) is a third, C++ decoder of our schemas.
const hasProtoc = requirePeers('protoc cross-checks', [peers.protoc, peers.protobufIncludes]);

describe.runIf(hasProtoc)('protoc decodes what we encode', () => {
  const decodeWithProtoc = (file: string, type: string, bytes: Buffer) => {
    const res = spawnSync('protoc', [`-I${protoDir}`, `--decode=${type}`, path.join(protoDir, file)], { input: bytes });
    expect(res.stderr.toString()).toBe('');
    expect(res.status).toBe(0);
    return res.stdout.toString();
  };

  it('CRI RunPodSandboxRequest', () => {
    const bytes = cri.RuntimeServiceService.RunPodSandbox.requestSerialize({
      config: { metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 2 }, portMappings: [{ protocol: cri.Protocol.UDP, containerPort: 53, hostPort: 5353 }] },
    });
    const text = decodeWithProtoc('cri/runtime/v1/api.proto', 'runtime.v1.RunPodSandboxRequest', bytes);
    expect(text).toContain('name: "web"');
    expect(text).toContain('attempt: 2');
    expect(text).toContain('protocol: UDP');
    expect(text).toContain('container_port: 53');
    expect(text).toContain('host_port: 5353');
  });

  it('CSI CreateVolumeRequest with secrets and a block capability', () => {
    const bytes = csi.ControllerService.CreateVolume.requestSerialize({
      name: 'pvc-1',
      capacityRange: { requiredBytes: 5 * 1024 ** 3 },
      volumeCapabilities: [{ block: {}, accessMode: { mode: csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_MULTI_WRITER } }],
      secrets: { token: 'x' },
      parameters: { 'csi.storage.k8s.io/fstype': 'xfs' },
    });
    const text = decodeWithProtoc('csi/v1/csi.proto', 'csi.v1.CreateVolumeRequest', bytes);
    expect(text).toContain('required_bytes: 5368709120');
    expect(text).toContain('block {');
    expect(text).toContain('mode: SINGLE_NODE_MULTI_WRITER');
    expect(text).toContain('key: "token"');
  });

  it('pluginregistration PluginInfo', () => {
    const bytes = pluginregistration.RegistrationService.GetInfo.responseSerialize({
      type: 'CSIPlugin',
      name: 'kemu.csi.k8s.io',
      endpoint: '/var/lib/kubelet/plugins/kemu/csi.sock',
      supportedVersions: ['1.0.0'],
    });
    const text = decodeWithProtoc('pluginregistration/api.proto', 'pluginregistration.PluginInfo', bytes);
    expect(text).toContain('type: "CSIPlugin"');
    expect(text).toContain('supported_versions: "1.0.0"');
  });
});
