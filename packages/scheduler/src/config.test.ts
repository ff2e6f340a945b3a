import { describe, expect, it } from 'vitest';
import { ConfigError, numFeasibleNodesToFind, parseConfig } from './config.js';
import { MemoryClient } from './client-memory.js';
import { Scheduler } from './scheduler.js';

const newSched = (config: unknown) =>
  new Scheduler({ client: new MemoryClient(), config: config as Record<string, unknown> });

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('KubeSchedulerConfiguration defaults', () => {
  it('enables the default plugins with the default weights', () => {
    const s = newSched(undefined);
    const fw = s.profiles.get('default-scheduler')!;
    expect(fw.scorePlugins.map((p) => `${p.name}:${fw.weights.get(p.name)}`)).toEqual([
      'TaintToleration:3',
      'NodeAffinity:2',
      'NodeResourcesFit:1',
      'PodTopologySpread:2',
      'InterPodAffinity:2',
      'NodeResourcesBalancedAllocation:1',
      'ImageLocality:1',
    ]);
    expect(fw.filterPlugins.map((p) => p.name)).toEqual([
      'NodeUnschedulable',
      'NodeName',
      'TaintToleration',
      'NodeAffinity',
      'NodePorts',
      'NodeResourcesFit',
      'VolumeRestrictions',
      'NodeVolumeLimits',
      'VolumeBinding',
      'VolumeZone',
      'PodTopologySpread',
      'InterPodAffinity',
    ]);
    expect(fw.preEnqueuePlugins.map((p) => p.name)).toEqual(['SchedulingGates']);
    expect(fw.queueSortPlugin.name).toBe('PrioritySort');
    expect(fw.postFilterPlugins.map((p) => p.name)).toEqual(['DefaultPreemption']);
    expect(fw.bindPlugins.map((p) => p.name)).toEqual(['DefaultBinder']);
    expect(s.config.podInitialBackoffSeconds).toBe(1);
    expect(s.config.podMaxBackoffSeconds).toBe(10);
  });

  it('adaptive percentageOfNodesToScore: 50% − nodes/125, floor 5%, at least 100 nodes', () => {
    expect(numFeasibleNodesToFind(50, 0)).toBe(50);
    expect(numFeasibleNodesToFind(100, 0)).toBe(100);
    expect(numFeasibleNodesToFind(200, 0)).toBe(100); // 49% of 200 = 98 → at least 100
    expect(numFeasibleNodesToFind(1000, 0)).toBe(420);
    expect(numFeasibleNodesToFind(5000, 0)).toBe(500);
    expect(numFeasibleNodesToFind(6000, 0)).toBe(300); // 2% → floor 5%
    expect(numFeasibleNodesToFind(1000, 30)).toBe(300);
    expect(numFeasibleNodesToFind(1000, 100)).toBe(1000);
  });
});

describe('profiles and plugin sets', () => {
  it('disables one plugin at one extension point, or all with *', () => {
    const s = newSched({
      apiVersion: 'kubescheduler.config.k8s.io/v1',
      kind: 'KubeSchedulerConfiguration',
      profiles: [
        { schedulerName: 'default-scheduler', plugins: { score: { disabled: [{ name: 'ImageLocality' }] } } },
        {
          schedulerName: 'no-scoring-scheduler',
          plugins: { preScore: { disabled: [{ name: '*' }] }, score: { disabled: [{ name: '*' }] } },
        },
      ],
    });
    expect(s.profiles.get('default-scheduler')!.scorePlugins.map((p) => p.name)).not.toContain(
      'ImageLocality',
    );
    expect(s.profiles.get('default-scheduler')!.preScorePlugins.map((p) => p.name)).toContain(
      'ImageLocality',
    );
    expect(s.profiles.get('no-scoring-scheduler')!.scorePlugins).toEqual([]);
    expect(s.profiles.get('no-scoring-scheduler')!.filterPlugins.length).toBe(12);
  });

  it('multiPoint overrides a default weight and score.enabled overrides multiPoint', () => {
    const s = newSched({
      profiles: [
        {
          plugins: {
            multiPoint: {
              enabled: [{ name: 'ImageLocality', weight: 7 }],
              disabled: [{ name: 'NodeResourcesBalancedAllocation' }],
            },
            score: { enabled: [{ name: 'TaintToleration', weight: 9 }] },
          },
        },
      ],
    });
    const fw = s.profiles.get('default-scheduler')!;
    expect(fw.weights.get('ImageLocality')).toBe(7);
    expect(fw.weights.get('TaintToleration')).toBe(9);
    expect(fw.plugins.has('NodeResourcesBalancedAllocation')).toBe(false);
  });

  it('pluginConfig args reach the plugin', () => {
    const s = newSched({
      profiles: [{ pluginConfig: [{ name: 'InterPodAffinity', args: { hardPodAffinityWeight: 5 } }] }],
    });
    expect(s.profiles.get('default-scheduler')!.plugins.has('InterPodAffinity')).toBe(true);
  });
});

describe('validation names the field', () => {
  const cases: [string, unknown, string][] = [
    [
      'percentage out of range',
      { percentageOfNodesToScore: 101 },
      'percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]',
    ],
    [
      'backoff order',
      { podInitialBackoffSeconds: 5, podMaxBackoffSeconds: 2 },
      'podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds',
    ],
    [
      'zero initial backoff',
      { podInitialBackoffSeconds: 0 },
      'podInitialBackoffSeconds: Invalid value: 0: must be greater than 0',
    ],
    [
      'parallelism',
      { parallelism: 0 },
      'parallelism: Invalid value: 0: should be an integer value greater than zero',
    ],
    [
      'duplicate profile',
      { profiles: [{ schedulerName: 'a' }, { schedulerName: 'a' }] },
      'profiles[1].schedulerName: Duplicate value: "a"',
    ],
    [
      'empty scheduler name',
      { profiles: [{ schedulerName: '' }] },
      'profiles[0].schedulerName: Required value',
    ],
    [
      'api version',
      { apiVersion: 'kubescheduler.config.k8s.io/v1beta3' },
      'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": supported values: "kubescheduler.config.k8s.io/v1"',
    ],
    ['unknown field', { profile: [] }, 'strict decoding error: unknown field "profile"'],
    [
      'scoring strategy',
      {
        profiles: [
          { pluginConfig: [{ name: 'NodeResourcesFit', args: { scoringStrategy: { type: 'Packed' } } }] },
        ],
      },
      'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Packed": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
    ],
    [
      'hard pod affinity weight',
      { profiles: [{ pluginConfig: [{ name: 'InterPodAffinity', args: { hardPodAffinityWeight: 101 } }] }] },
      'profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0-100]',
    ],
    [
      'differing queue sort',
      {
        profiles: [
          { schedulerName: 'a' },
          { schedulerName: 'b', plugins: { queueSort: { enabled: [{ name: 'X' }] } } },
        ],
      },
      'profiles[1].plugins.queueSort: Invalid value: must be the same for all profiles',
    ],
  ];
  for (const [name, cfg, msg] of cases) {
    it(name, () => {
      expect(errorOf(() => parseConfig(cfg as Record<string, unknown>)).message).toBe(msg);
    });
  }

  it('an unknown plugin name stops startup and names the entry', () => {
    const e = errorOf(() =>
      newSched({
        profiles: [
          { plugins: { score: { enabled: [{ name: 'NodeResourcesFit' }, { name: 'Nope', weight: 1 }] } } },
        ],
      }),
    );
    expect(e.message).toBe(
      'profiles[0].plugins.score.enabled[1].name: Invalid value: "Nope": plugin is not registered',
    );
  });

  it('a plugin enabled at a point it does not implement is rejected', () => {
    const e = errorOf(() =>
      newSched({ profiles: [{ plugins: { filter: { enabled: [{ name: 'ImageLocality' }] } } }] }),
    );
    expect(e.message).toBe(
      'profiles[0].plugins.filter.enabled[0].name: Invalid value: "ImageLocality": plugin does not extend filter plugin',
    );
  });

  it('YAML syntax errors are reported without a stack', () => {
    expect(errorOf(() => parseConfig('profiles: [\n')).message).toMatch(
      /^could not parse configuration YAML: /,
    );
  });

  it('parses the YAML form', () => {
    const c = parseConfig(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
profiles:
  - schedulerName: default-scheduler
  - schedulerName: bin-packer
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
`);
    expect(c.percentageOfNodesToScore).toBe(30);
    expect(c.profiles.map((p) => p.schedulerName)).toEqual(['default-scheduler', 'bin-packer']);
  });
});
