import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeArgs } from './node-process.js';
import { kubeletConfigFor, parseDeviceRequest, parseKubeletConfigFlags } from './node-resources.js';

describe('node resource flags', () => {
  it('parses --device RESOURCE=COUNT[:MODEL] and refuses what is not an extended resource', () => {
    expect(parseDeviceRequest('nvidia.com/gpu=8')).toEqual({ resource: 'nvidia.com/gpu', count: 8, model: undefined });
    expect(parseDeviceRequest('nvidia.com/gpu=2:H200')).toEqual({ resource: 'nvidia.com/gpu', count: 2, model: 'H200' });
    expect(() => parseDeviceRequest('gpu=8')).toThrow(/"gpu" is not an extended resource name/);
    expect(() => parseDeviceRequest('nvidia.com/gpu')).toThrow(/expected RESOURCE=COUNT/);
    expect(() => parseDeviceRequest('nvidia.com/gpu=0')).toThrow(/from 1 to 1024/);
  });

  it('reads --kubelet-config as shared or per node, a node’s own file winning', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kc-'));
    try {
      const write = (name: string, maxPods: number) => {
        const f = path.join(dir, name);
        fs.writeFileSync(f, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: ${maxPods}\n`);
        return f;
      };
      const shared = write('shared.yaml', 50);
      const own = write('own.yaml', 7);
      const files = parseKubeletConfigFlags([shared, `kemu-node-2=${own}`]);
      expect(files).toEqual({ '*': shared, 'kemu-node-2': own });
      expect(kubeletConfigFor(files, 'kemu-node-1')?.maxPods).toBe(50);
      expect(kubeletConfigFor(files, 'kemu-node-2')?.maxPods).toBe(7);
      expect(kubeletConfigFor(undefined, 'kemu-node-1')).toBeUndefined();
      expect(() => kubeletConfigFor({ '*': path.join(dir, 'missing.yaml') }, 'n')).toThrow(/failed to read kubelet config file .*missing.yaml": ENOENT/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes them on to a node process', () => {
    const args = nodeArgs({
      name: 'n1', ip: '172.18.0.10', podCIDR: '10.244.0.0/24', stateDir: '/s', apiSocket: '/s/kemu.sock', datapath: 'sim', network: 'bridge',
      podNetwork: '10.244.0.0/16', runtime: 'sim', storage: 'sim', durable: false, fast: true,
      kubeletConfigFile: '/etc/k.yaml', devices: [{ resource: 'nvidia.com/gpu', count: 8, model: 'H100' }, { resource: 'example.com/fpga', count: 1 }],
    });
    expect(args.slice(-6)).toEqual(['--kubelet-config', '/etc/k.yaml', '--device', 'nvidia.com/gpu=8:H100', '--device', 'example.com/fpga=1']);
  });
});
