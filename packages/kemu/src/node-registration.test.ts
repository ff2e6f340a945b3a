import { describe, expect, it } from 'vitest';
import { nodeArgs } from './node-process.js';
import { formatTaint, parseNodeLabels, parseTaint, parseTaintList } from './node-registration.js';

describe('parseTaint', () => {
  it('reads taints as kubectl taint writes them', () => {
    expect(parseTaint('dedicated=db:NoSchedule')).toEqual({ key: 'dedicated', value: 'db', effect: 'NoSchedule' });
    expect(parseTaint('example.com/gpu:NoExecute')).toEqual({ key: 'example.com/gpu', effect: 'NoExecute' });
    expect(parseTaint('k=:PreferNoSchedule')).toEqual({ key: 'k', effect: 'PreferNoSchedule' });
  });

  it('refuses a missing or unknown effect, and keys or values that are no names', () => {
    expect(() => parseTaint('dedicated=db')).toThrow('invalid taint spec: dedicated=db: want key=value:Effect or key:Effect');
    expect(() => parseTaint('dedicated=db:Sometimes')).toThrow('invalid taint effect: Sometimes, unsupported taint effect (want NoSchedule, PreferNoSchedule, NoExecute)');
    expect(() => parseTaint('bad key:NoSchedule')).toThrow('invalid taint key "bad key"');
    expect(() => parseTaint('=v:NoSchedule')).toThrow('invalid taint key ""');
    expect(() => parseTaint('Bad.Prefix/k:NoSchedule')).toThrow('invalid taint key "Bad.Prefix/k"');
    expect(() => parseTaint('k=-v:NoSchedule')).toThrow('invalid taint value "-v"');
  });
});

describe('the kubelet registration flags', () => {
  it('read --register-with-taints and --node-labels lists, and write taints back', () => {
    expect(parseTaintList('a=b:NoSchedule, c:NoExecute')).toEqual([
      { key: 'a', value: 'b', effect: 'NoSchedule' },
      { key: 'c', effect: 'NoExecute' },
    ]);
    expect(() => parseTaintList('a=b:NoSchedule,c')).toThrow('invalid taint spec: c');
    expect(parseNodeLabels('topology.kubernetes.io/zone=z1,gpu=')).toEqual({ 'topology.kubernetes.io/zone': 'z1', gpu: '' });
    expect(() => parseNodeLabels('zone')).toThrow('invalid node label "zone": want key=value');
    expect(() => parseNodeLabels('bad key=x')).toThrow('invalid node label key "bad key": name part must consist of alphanumeric characters');
    expect(() => parseNodeLabels('zone=-x')).toThrow('invalid node label value "-x"');
    for (const s of ['a=b:NoSchedule', 'example.com/k:NoExecute']) expect(formatTaint(parseTaint(s))).toBe(s);
  });

  it('pass a node process its taints and labels as the kubelet flags', () => {
    const args = nodeArgs({
      name: 'n1',
      ip: '172.18.0.11',
      podCIDR: '10.244.1.0/24',
      stateDir: '/tmp/x',
      apiSocket: '/tmp/x/kemu.sock',
      datapath: 'sim',
      network: 'bridge',
      podNetwork: '10.244.0.0/16',
      runtime: 'sim',
      storage: 'sim',
      durable: false,
      fast: true,
      taints: [{ key: 'gpu', value: 'h200', effect: 'NoSchedule' }, { key: 'edge', effect: 'NoExecute' }],
      labels: { zone: 'z1', tier: 'gpu' },
    });
    expect(args.slice(args.indexOf('--register-with-taints'), args.indexOf('--register-with-taints') + 2)).toEqual(['--register-with-taints', 'gpu=h200:NoSchedule,edge:NoExecute']);
    expect(args.slice(args.indexOf('--node-labels'), args.indexOf('--node-labels') + 2)).toEqual(['--node-labels', 'zone=z1,tier=gpu']);
  });
});
