// KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): parsing, defaulting and validation.
// Every error names the offending field the way the reference validation does.
import { parse as parseYaml } from 'yaml';
import { EXTENSION_POINTS, type ExtensionPoint } from './extension-points.js';

export const CONFIG_API_VERSION = 'kubescheduler.config.k8s.io/v1';
export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';

export interface PluginRef {
  name: string;
  weight?: number;
}
export interface PluginSet {
  enabled?: PluginRef[];
  disabled?: PluginRef[];
}
export type Plugins = Partial<Record<ExtensionPoint | 'multiPoint', PluginSet>>;

export interface Profile {
  schedulerName: string;
  percentageOfNodesToScore?: number | null;
  plugins: Plugins;
  pluginConfig: { name: string; args: unknown }[];
}

export interface SchedulerConfig {
  parallelism: number;
  percentageOfNodesToScore: number;
  podInitialBackoffSeconds: number;
  podMaxBackoffSeconds: number;
  /** Pods stay in the unschedulable map at most this long before a retry (5 min). */
  podMaxInUnschedulablePodsDurationSeconds: number;
  profiles: Profile[];
}

export class ConfigError extends Error {
  readonly field: string;
  constructor(field: string, detail: string) {
    super(field ? `${field}: ${detail}` : detail);
    this.name = 'ConfigError';
    this.field = field;
  }
}

const TOP_FIELDS = new Set([
  'apiVersion',
  'kind',
  'parallelism',
  'percentageOfNodesToScore',
  'podInitialBackoffSeconds',
  'podMaxBackoffSeconds',
  'profiles',
  'leaderElection',
  'clientConnection',
  'extenders',
  'delayCacheUntilActive',
  'enableProfiling',
  'enableContentionProfiling',
  'healthzBindAddress',
  'metricsBindAddress',
]);
const PROFILE_FIELDS = new Set(['schedulerName', 'percentageOfNodesToScore', 'plugins', 'pluginConfig']);
const PLUGINS_FIELDS = new Set<string>([...EXTENSION_POINTS, 'multiPoint']);

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown) => (typeof v === 'string' ? `"${v}"` : JSON.stringify(v));

function unknownFields(obj: Record<string, unknown>, allowed: Set<string>, path: string): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.has(k)) throw new ConfigError('', `strict decoding error: unknown field "${path}${k}"`);
  }
}

function num(v: unknown, field: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new ConfigError(field, `Invalid value: ${show(v)}: must be a number`);
  return v;
}

function pluginSet(v: unknown, field: string): PluginSet {
  if (v === undefined || v === null) return {};
  if (!isObj(v))
    throw new ConfigError(field, `Invalid value: ${show(v)}: must be an object with enabled/disabled lists`);
  unknownFields(v, new Set(['enabled', 'disabled']), `${field}.`);
  const list = (x: unknown, f: string): PluginRef[] => {
    if (x === undefined || x === null) return [];
    if (!Array.isArray(x)) throw new ConfigError(f, `Invalid value: ${show(x)}: must be a list`);
    return x.map((p, i) => {
      if (!isObj(p) || typeof p.name !== 'string' || p.name === '')
        throw new ConfigError(`${f}[${i}].name`, 'Required value');
      const weight = num(p.weight, `${f}[${i}].weight`);
      if (weight !== undefined && (weight < 0 || !Number.isInteger(weight))) {
        throw new ConfigError(
          `${f}[${i}].weight`,
          `Invalid value: ${weight}: must be a non-negative integer`,
        );
      }
      return weight === undefined ? { name: p.name } : { name: p.name, weight };
    });
  };
  return { enabled: list(v.enabled, `${field}.enabled`), disabled: list(v.disabled, `${field}.disabled`) };
}

/** Parse YAML (or an already-parsed object) into a defaulted, validated configuration. */
export function parseConfig(input: string | Record<string, unknown> | undefined | null): SchedulerConfig {
  let raw: unknown = input ?? {};
  if (typeof input === 'string') {
    try {
      raw = parseYaml(input) ?? {};
    } catch (err) {
      throw new ConfigError(
        '',
        `could not parse configuration YAML: ${(err as Error).message.split('\n')[0]}`,
      );
    }
  }
  if (!isObj(raw)) throw new ConfigError('', 'configuration must be a YAML mapping');
  if (raw.apiVersion !== undefined && raw.apiVersion !== CONFIG_API_VERSION) {
    throw new ConfigError(
      'apiVersion',
      `Unsupported value: ${show(raw.apiVersion)}: supported values: "${CONFIG_API_VERSION}"`,
    );
  }
  if (raw.kind !== undefined && raw.kind !== 'KubeSchedulerConfiguration') {
    throw new ConfigError(
      'kind',
      `Unsupported value: ${show(raw.kind)}: supported values: "KubeSchedulerConfiguration"`,
    );
  }
  unknownFields(raw, TOP_FIELDS, '');
  const cfg: SchedulerConfig = {
    parallelism: num(raw.parallelism, 'parallelism') ?? 16,
    percentageOfNodesToScore: num(raw.percentageOfNodesToScore, 'percentageOfNodesToScore') ?? 0,
    podInitialBackoffSeconds: num(raw.podInitialBackoffSeconds, 'podInitialBackoffSeconds') ?? 1,
    podMaxBackoffSeconds: num(raw.podMaxBackoffSeconds, 'podMaxBackoffSeconds') ?? 10,
    podMaxInUnschedulablePodsDurationSeconds: 300,
    profiles: [],
  };
  if (cfg.parallelism <= 0 || !Number.isInteger(cfg.parallelism)) {
    throw new ConfigError(
      'parallelism',
      `Invalid value: ${cfg.parallelism}: should be an integer value greater than zero`,
    );
  }
  if (cfg.percentageOfNodesToScore < 0 || cfg.percentageOfNodesToScore > 100) {
    throw new ConfigError(
      'percentageOfNodesToScore',
      `Invalid value: ${cfg.percentageOfNodesToScore}: not in valid range [0-100]`,
    );
  }
  if (cfg.podInitialBackoffSeconds <= 0) {
    throw new ConfigError(
      'podInitialBackoffSeconds',
      `Invalid value: ${cfg.podInitialBackoffSeconds}: must be greater than 0`,
    );
  }
  if (cfg.podMaxBackoffSeconds < cfg.podInitialBackoffSeconds) {
    throw new ConfigError(
      'podMaxBackoffSeconds',
      `Invalid value: ${cfg.podMaxBackoffSeconds}: must be greater than or equal to PodInitialBackoffSeconds`,
    );
  }
  const profiles = raw.profiles ?? [{}];
  if (!Array.isArray(profiles))
    throw new ConfigError('profiles', `Invalid value: ${show(profiles)}: must be a list`);
  if (profiles.length === 0) throw new ConfigError('profiles', 'Required value');
  const names = new Set<string>();
  profiles.forEach((p, i) => {
    const f = `profiles[${i}]`;
    if (!isObj(p)) throw new ConfigError(f, `Invalid value: ${show(p)}: must be an object`);
    unknownFields(p, PROFILE_FIELDS, `${f}.`);
    const schedulerName = p.schedulerName === undefined ? DEFAULT_SCHEDULER_NAME : p.schedulerName;
    if (typeof schedulerName !== 'string' || schedulerName === '')
      throw new ConfigError(`${f}.schedulerName`, 'Required value');
    if (names.has(schedulerName))
      throw new ConfigError(`${f}.schedulerName`, `Duplicate value: "${schedulerName}"`);
    names.add(schedulerName);
    const pct = num(p.percentageOfNodesToScore, `${f}.percentageOfNodesToScore`);
    if (pct !== undefined && (pct < 0 || pct > 100)) {
      throw new ConfigError(
        `${f}.percentageOfNodesToScore`,
        `Invalid value: ${pct}: not in valid range [0-100]`,
      );
    }
    const plugins: Plugins = {};
    if (p.plugins !== undefined && p.plugins !== null) {
      if (!isObj(p.plugins))
        throw new ConfigError(`${f}.plugins`, `Invalid value: ${show(p.plugins)}: must be an object`);
      unknownFields(p.plugins, PLUGINS_FIELDS, `${f}.plugins.`);
      for (const point of PLUGINS_FIELDS) {
        const set = pluginSet(p.plugins[point], `${f}.plugins.${point}`);
        plugins[point as ExtensionPoint] = set;
        const seen = new Set<string>();
        set.enabled?.forEach((r, j) => {
          if (seen.has(r.name))
            throw new ConfigError(`${f}.plugins.${point}.enabled[${j}]`, `Duplicate value: "${r.name}"`);
          seen.add(r.name);
          if (r.weight !== undefined && r.weight > 100 && (point === 'score' || point === 'multiPoint')) {
            throw new ConfigError(
              `${f}.plugins.${point}.enabled[${j}].weight`,
              `Invalid value: ${r.weight}: must be in the range [0, 100]`,
            );
          }
        });
      }
    }
    const pluginConfig: { name: string; args: unknown }[] = [];
    if (p.pluginConfig !== undefined && p.pluginConfig !== null) {
      if (!Array.isArray(p.pluginConfig))
        throw new ConfigError(`${f}.pluginConfig`, `Invalid value: ${show(p.pluginConfig)}: must be a list`);
      const seen = new Set<string>();
      p.pluginConfig.forEach((pc, j) => {
        if (!isObj(pc) || typeof pc.name !== 'string' || pc.name === '')
          throw new ConfigError(`${f}.pluginConfig[${j}].name`, 'Required value');
        if (seen.has(pc.name))
          throw new ConfigError(`${f}.pluginConfig[${j}]`, `Duplicate value: "${pc.name}"`);
        seen.add(pc.name);
        validateArgs(pc.name, pc.args ?? {}, `${f}.pluginConfig[${j}].args`);
        pluginConfig.push({ name: pc.name, args: pc.args ?? {} });
      });
    }
    cfg.profiles.push({ schedulerName, percentageOfNodesToScore: pct ?? null, plugins, pluginConfig });
  });
  // One queue serves all profiles, so they must sort it the same way.
  const qs = cfg.profiles.map((p) => JSON.stringify(p.plugins.queueSort ?? {}));
  qs.forEach((q, i) => {
    if (q !== qs[0])
      throw new ConfigError(
        `profiles[${i}].plugins.queueSort`,
        'Invalid value: must be the same for all profiles',
      );
  });
  return cfg;
}

function validateArgs(name: string, args: unknown, f: string): void {
  if (!isObj(args)) throw new ConfigError(f, `Invalid value: ${show(args)}: must be an object`);
  const range = (v: unknown, field: string, lo: number, hi: number) => {
    if (v === undefined) return;
    if (typeof v !== 'number' || v < lo || v > hi)
      throw new ConfigError(`${f}.${field}`, `Invalid value: ${show(v)}: not in valid range [${lo}-${hi}]`);
  };
  switch (name) {
    case 'NodeResourcesFit': {
      const ss = args.scoringStrategy;
      if (ss === undefined) return;
      if (!isObj(ss))
        throw new ConfigError(`${f}.scoringStrategy`, `Invalid value: ${show(ss)}: must be an object`);
      const types = ['LeastAllocated', 'MostAllocated', 'RequestedToCapacityRatio'];
      if (ss.type !== undefined && !types.includes(ss.type as string)) {
        throw new ConfigError(
          `${f}.scoringStrategy.type`,
          `Unsupported value: ${show(ss.type)}: supported values: ${types.map((t) => `"${t}"`).join(', ')}`,
        );
      }
      const res = (ss.resources ?? []) as { name?: string; weight?: number }[];
      if (!Array.isArray(res))
        throw new ConfigError(`${f}.scoringStrategy.resources`, 'Invalid value: must be a list');
      res.forEach((r, i) => {
        if (!r?.name) throw new ConfigError(`${f}.scoringStrategy.resources[${i}].name`, 'Required value');
        range(r.weight ?? 1, `scoringStrategy.resources[${i}].weight`, 1, 100);
      });
      if (ss.type === 'RequestedToCapacityRatio') {
        const shape = (
          ss.requestedToCapacityRatio as { shape?: { utilization: number; score: number }[] } | undefined
        )?.shape;
        if (!Array.isArray(shape) || shape.length === 0) {
          throw new ConfigError(
            `${f}.scoringStrategy.requestedToCapacityRatio.shape`,
            'Required value: at least one point must be specified',
          );
        }
        shape.forEach((pt, i) => {
          range(pt?.utilization, `scoringStrategy.requestedToCapacityRatio.shape[${i}].utilization`, 0, 100);
          range(pt?.score, `scoringStrategy.requestedToCapacityRatio.shape[${i}].score`, 0, 10);
          if (i > 0 && pt.utilization <= shape[i - 1].utilization) {
            throw new ConfigError(
              `${f}.scoringStrategy.requestedToCapacityRatio.shape[${i}].utilization`,
              `Invalid value: ${pt.utilization}: utilization values must be sorted in increasing order`,
            );
          }
        });
      }
      return;
    }
    case 'InterPodAffinity':
      range(args.hardPodAffinityWeight, 'hardPodAffinityWeight', 0, 100);
      return;
    case 'DefaultPreemption':
      range(args.minCandidateNodesPercentage, 'minCandidateNodesPercentage', 0, 100);
      if (
        args.minCandidateNodesAbsolute !== undefined &&
        (typeof args.minCandidateNodesAbsolute !== 'number' || args.minCandidateNodesAbsolute < 0)
      ) {
        throw new ConfigError(
          `${f}.minCandidateNodesAbsolute`,
          `Invalid value: ${show(args.minCandidateNodesAbsolute)}: not in valid range [0, inf)`,
        );
      }
      if (args.minCandidateNodesPercentage === 0 && args.minCandidateNodesAbsolute === 0) {
        throw new ConfigError(
          f,
          'Invalid value: both minCandidateNodesPercentage and minCandidateNodesAbsolute cannot be zero',
        );
      }
      return;
    case 'PodTopologySpread': {
      const t = args.defaultingType;
      if (t !== undefined && t !== 'System' && t !== 'List') {
        throw new ConfigError(
          `${f}.defaultingType`,
          `Unsupported value: ${show(t)}: supported values: "List", "System"`,
        );
      }
      if (t === 'System' && Array.isArray(args.defaultConstraints) && args.defaultConstraints.length > 0) {
        throw new ConfigError(
          `${f}.defaultConstraints`,
          'Invalid value: when .defaultingType is "System", .defaultConstraints must be empty',
        );
      }
      const dc = (args.defaultConstraints ?? []) as {
        maxSkew?: number;
        topologyKey?: string;
        whenUnsatisfiable?: string;
      }[];
      dc.forEach((c, i) => {
        if (!(typeof c.maxSkew === 'number' && c.maxSkew > 0)) {
          throw new ConfigError(
            `${f}.defaultConstraints[${i}].maxSkew`,
            `Invalid value: ${show(c.maxSkew)}: must be greater than zero`,
          );
        }
        if (!c.topologyKey)
          throw new ConfigError(
            `${f}.defaultConstraints[${i}].topologyKey`,
            'Required value: can not be empty',
          );
        if (c.whenUnsatisfiable !== 'DoNotSchedule' && c.whenUnsatisfiable !== 'ScheduleAnyway') {
          throw new ConfigError(
            `${f}.defaultConstraints[${i}].whenUnsatisfiable`,
            `Unsupported value: ${show(c.whenUnsatisfiable)}: supported values: "DoNotSchedule", "ScheduleAnyway"`,
          );
        }
      });
      return;
    }
    default:
      return;
  }
}

/** Adaptive share of nodes to score: 50% minus 1% per 125 nodes, never below 5%. */
export function numFeasibleNodesToFind(numAllNodes: number, percentage: number): number {
  const MIN_FEASIBLE = 100;
  if (numAllNodes < MIN_FEASIBLE) return numAllNodes;
  let pct = percentage;
  if (pct === 0) {
    pct = 50 - Math.trunc(numAllNodes / 125);
    if (pct < 5) pct = 5;
  }
  if (pct >= 100) return numAllNodes;
  const n = Math.trunc((numAllNodes * pct) / 100);
  return Math.max(n, MIN_FEASIBLE);
}
