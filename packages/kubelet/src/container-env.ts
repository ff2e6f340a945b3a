// A container's environment as the kubelet builds it (makeEnvironmentVariables): envFrom sources first
// (ConfigMaps and Secrets, with prefixes), then `env` in order (literal values with `$(VAR)` expanded against
// what is defined so far and the Service variables; valueFrom of every kind), then the Service variables not
// already set. A missing object or key that is not optional is a CreateContainerConfigError with the
// kubelet's message; the command, args and subPathExpr expand against the result.
import type { ConfigMap, Container, Pod, ResourceList, Secret } from '@kemu/core';
import { ContainerConfigError } from './container-config-error.js';
import { containerResourceValue, type DownwardContext, DownwardAPIError, podFieldValue } from './downward-api.js';
import { expand, mappingFuncFor } from './env-expansion.js';
import { type ServiceForEnv, serviceEnvVars, servicesForPod } from './service-env.js';

/** Where referenced objects come from; `undefined` means "not found". */
export interface EnvObjectSource {
  configMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
  secret(namespace: string, name: string): Promise<Secret | undefined>;
  /**
   * The Services a pod of `namespace` can see: that namespace's and `default`'s `kubernetes` (or none when
   * the kind is not served). Only these shape its variables, and listing every Service of the cluster for
   * each container made a container start cost as much as the cluster had Services.
   */
  services(namespace: string): Promise<ServiceForEnv[]>;
  /** The node's allocatable: what a limit the container does not set stands for. */
  nodeAllocatable(): Promise<ResourceList>;
}

export interface EnvVarValue {
  name: string;
  value: string;
}

export interface ContainerEnv {
  env: EnvVarValue[];
  /** Warnings to record as Events (reason, message). */
  warnings: { reason: string; message: string }[];
}

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** Upstream's IsEnvVarName (before relaxed validation): what envFrom keys must be to be used. */
export function isEnvVarName(name: string): boolean {
  return ENV_NAME.test(name);
}

export async function makeEnvironmentVariables(
  pod: Pod,
  container: Container,
  src: EnvObjectSource,
  ctx: DownwardContext,
): Promise<ContainerEnv> {
  const ns = pod.metadata.namespace ?? 'default';
  const warnings: ContainerEnv['warnings'] = [];
  const serviceEnv = new Map<string, string>();
  for (const v of serviceEnvVars(servicesForPod(await src.services(ns), ns, pod.spec.enableServiceLinks !== false))) {
    serviceEnv.set(v.name, v.value);
  }
  const configMaps = new Map<string, ConfigMap | undefined>();
  const secrets = new Map<string, Secret | undefined>();
  const getConfigMap = async (name: string) => {
    if (!configMaps.has(name)) configMaps.set(name, await src.configMap(ns, name));
    return configMaps.get(name);
  };
  const getSecret = async (name: string) => {
    if (!secrets.has(name)) secrets.set(name, await src.secret(ns, name));
    return secrets.get(name);
  };

  const tmpEnv = new Map<string, string>();
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    let entries: [string, string][];
    let what: string;
    if (from.configMapRef) {
      const cm = await getConfigMap(from.configMapRef.name);
      if (!cm) {
        if (from.configMapRef.optional) continue;
        throw new ContainerConfigError(`configmap "${from.configMapRef.name}" not found`);
      }
      entries = Object.entries(cm.data ?? {});
      what = `configMap ${ns}/${from.configMapRef.name}`;
    } else if (from.secretRef) {
      const s = await getSecret(from.secretRef.name);
      if (!s) {
        if (from.secretRef.optional) continue;
        throw new ContainerConfigError(`secret "${from.secretRef.name}" not found`);
      }
      entries = Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]);
      what = `secret ${ns}/${from.secretRef.name}`;
    } else continue;
    const invalid: string[] = [];
    for (const [key, value] of entries) {
      const k = prefix + key;
      if (!isEnvVarName(k)) invalid.push(k);
      else tmpEnv.set(k, value);
    }
    if (invalid.length) {
      warnings.push({
        reason: 'InvalidEnvironmentVariableNames',
        message: `Keys [${invalid.sort().join(', ')}] from the EnvFrom ${what} were skipped since they are considered invalid environment variable names.`,
      });
    }
  }

  const mapping = mappingFuncFor(tmpEnv, serviceEnv);
  for (const ev of container.env ?? []) {
    let value = ev.value ?? '';
    if (value !== '') value = expand(value, mapping);
    else if (ev.valueFrom) {
      const vf = ev.valueFrom;
      try {
        if (vf.fieldRef) value = podFieldValue(pod, vf.fieldRef.fieldPath, ctx);
        else if (vf.resourceFieldRef) {
          const r = vf.resourceFieldRef;
          const target = r.containerName
            ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === r.containerName)
            : container;
          if (!target) throw new DownwardAPIError(`container ${r.containerName} not found in pod`);
          value = containerResourceValue(target, r.resource, r.divisor, await src.nodeAllocatable());
        } else if (vf.configMapKeyRef) {
          const ref = vf.configMapKeyRef;
          const cm = await getConfigMap(ref.name);
          if (!cm) {
            if (ref.optional) continue;
            throw new ContainerConfigError(`configmap "${ref.name}" not found`);
          }
          const v = cm.data?.[ref.key];
          if (v === undefined) {
            if (ref.optional) continue;
            throw new ContainerConfigError(`couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`);
          }
          value = v;
        } else if (vf.secretKeyRef) {
          const ref = vf.secretKeyRef;
          const s = await getSecret(ref.name);
          if (!s) {
            if (ref.optional) continue;
            throw new ContainerConfigError(`secret "${ref.name}" not found`);
          }
          const v = s.data?.[ref.key];
          if (v === undefined) {
            if (ref.optional) continue;
            throw new ContainerConfigError(`couldn't find key ${ref.key} in Secret ${ns}/${ref.name}`);
          }
          value = Buffer.from(v, 'base64').toString('utf8');
        }
      } catch (err) {
        if (err instanceof DownwardAPIError) throw new ContainerConfigError(err.message);
        throw err;
      }
    }
    tmpEnv.set(ev.name, value);
  }
  for (const [k, v] of serviceEnv) if (!tmpEnv.has(k)) tmpEnv.set(k, v);
  return { env: [...tmpEnv].map(([name, value]) => ({ name, value })), warnings };
}

/** The command and args with `$(VAR)` expanded against the container's final environment. */
export function expandCommandAndArgs(container: Container, env: EnvVarValue[]): { command: string[]; args: string[] } {
  const mapping = mappingFuncFor(new Map(env.map((e) => [e.name, e.value])));
  return {
    command: (container.command ?? []).map((s) => expand(s, mapping)),
    args: (container.args ?? []).map((s) => expand(s, mapping)),
  };
}

/** A mount's subPathExpr expanded; every referenced variable must be set and non-empty. */
export function expandSubPathExpr(expr: string, env: EnvVarValue[]): string {
  const vars = new Map(env.map((e) => [e.name, e.value]));
  const missing = new Set<string>();
  const out = expand(expr, (key) => {
    const v = vars.get(key);
    if (!v) missing.add(key);
    return v ?? '';
  });
  if (missing.size) throw new ContainerConfigError(`missing value for ${[...missing].sort().join(', ')}`);
  return out;
}
