#!/usr/bin/env node
// kemu-scheduler: `simulate` (what-if placement of pods on a cluster described by manifests) and `run`
// (a long-lived scheduler against a @kemu/core store).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as core from '@kemu/core';
import { Command } from 'commander';
import { ConfigError, parseConfig, type SchedulerConfig } from './config.js';
import { ensureSchedulingKinds } from './kinds.js';
import type { PluginFactory } from './framework.js';
import { Scheduler } from './scheduler.js';
import { SimulationInputError, simulate } from './simulate.js';
import type { KubeObject, Pod } from './types.js';

class CliError extends Error {}

// A closed pipe (`| head`) ends output quietly, as other CLI tools do.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

function readText(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new CliError(`cannot read ${flag} ${path}: ${why}`);
  }
}

function readManifests(path: string, flag: string): KubeObject[] {
  ensureSchedulingKinds();
  const text = readText(path, flag);
  try {
    return core.parseManifests(text, { source: path, validate: false });
  } catch (err) {
    throw new CliError(`${flag} ${path}: ${(err as Error).message}`);
  }
}

function loadConfig(path: string | undefined): SchedulerConfig {
  const text = path ? readText(path, '--config') : undefined;
  try {
    return parseConfig(text);
  } catch (err) {
    if (err instanceof ConfigError)
      throw new CliError(`invalid configuration${path ? ` in ${path}` : ''}: ${err.message}`);
    throw err;
  }
}

/** An out-of-tree plugin module exports `plugins` (or a default export): `{ Name: factory }`. */
async function loadPlugins(modules: string[]): Promise<Record<string, PluginFactory>> {
  const out: Record<string, PluginFactory> = {};
  for (const m of modules) {
    let mod: Record<string, unknown>;
    try {
      mod = await import(pathToFileURL(resolve(m)).href);
    } catch (err) {
      throw new CliError(`cannot load plugin module ${m}: ${(err as Error).message.split('\n')[0]}`);
    }
    const table = (mod.plugins ?? mod.default) as Record<string, unknown> | undefined;
    if (!table || typeof table !== 'object') {
      throw new CliError(
        `plugin module ${m} must export "plugins" (or a default export) mapping names to factories`,
      );
    }
    for (const [name, f] of Object.entries(table)) {
      if (typeof f !== 'function')
        throw new CliError(`plugin module ${m}: "${name}" is not a factory function`);
      out[name] = f as PluginFactory;
    }
  }
  return out;
}

function asConfigError(err: unknown): never {
  if (err instanceof ConfigError) throw new CliError(`invalid configuration: ${err.message}`);
  throw err;
}

const collect = (v: string, prev: string[]) => [...prev, v];

const program = new Command()
  .name('kemu-scheduler')
  .description(
    'The kube-scheduler framework and default plugins: what-if simulation and a long-lived scheduler.',
  )
  .showHelpAfterError();

program
  .command('simulate')
  .description('schedule new pods onto a cluster described by manifests and print each placement as JSON')
  .requiredOption(
    '--cluster <file>',
    'Nodes, existing Pods, PVs/PVCs/StorageClasses/CSINodes, PriorityClasses (YAML or JSON)',
  )
  .requiredOption('--pods <file>', 'pods to schedule, in order')
  .option('--config <file>', 'KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)')
  .option('--explain', 'include per-plugin scores and filter results for every node')
  .option('--seed <n>', 'seed for tie-breaking', '1')
  .option('--plugin <module>', 'load out-of-tree plugins from a module (repeatable)', collect, [])
  .option('-o, --output <format>', 'ndjson (one placement per line) or json (one array)', 'ndjson')
  .action(async (o) => {
    if (!['ndjson', 'json'].includes(o.output))
      throw new CliError(`--output must be ndjson or json, got "${o.output}"`);
    const seed = Number(o.seed);
    if (!Number.isInteger(seed)) throw new CliError(`--seed must be an integer, got "${o.seed}"`);
    const config = loadConfig(o.config);
    const cluster = readManifests(o.cluster, '--cluster');
    const pods = readManifests(o.pods, '--pods');
    const notPods = pods.filter((p) => p.kind !== 'Pod');
    if (notPods.length > 0)
      throw new CliError(
        `--pods ${o.pods}: expected only Pod objects, found ${notPods[0].kind} "${notPods[0].metadata?.name}"`,
      );
    const plugins = await loadPlugins(o.plugin);
    const r = await simulate(cluster, pods as Pod[], { config, explain: o.explain, seed, plugins }).catch(
      asConfigError,
    );
    if (o.output === 'json') process.stdout.write(`${JSON.stringify(r.placements, null, 2)}\n`);
    else for (const p of r.placements) process.stdout.write(`${JSON.stringify(p)}\n`);
  });

program
  .command('run')
  .description('run a long-lived scheduler against a @kemu/core store')
  .option('--config <file>', 'KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)')
  .option(
    '--etcd <endpoints>',
    'use the @kemu/core etcd store at these client URLs (comma-separated), shared with the cluster',
  )
  .option('--etcd-prefix <prefix>', 'key prefix of the cluster in etcd', '/kemu/')
  .option('--data-dir <dir>', 'use a @kemu/core file store in this directory (this process owns it)')
  .option('--load <file>', 'create these objects in the store first (repeatable)', collect, [])
  .option('--plugin <module>', 'load out-of-tree plugins from a module (repeatable)', collect, [])
  .option('--once', 'exit when no pod is left to schedule (instead of running until SIGINT/SIGTERM)')
  .action(async (o) => {
    const config = loadConfig(o.config);
    const plugins = await loadPlugins(o.plugin);
    const objects = (o.load as string[]).flatMap((f) => readManifests(f, '--load'));
    if (o.etcd && o.dataDir) throw new CliError('--etcd and --data-dir are exclusive: pick one store');
    let store: core.Store;
    try {
      if (o.etcd) {
        const endpoints = String(o.etcd)
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean);
        for (const e of endpoints) {
          if (!/^https?:\/\/[^/\s]+\/?$/.test(e))
            throw new CliError(`--etcd: "${e}" is not a client URL like http://127.0.0.1:2379`);
        }
        // Fail now, not in the middle of scheduling, if etcd is unreachable.
        const timeout = new Promise<never>((_, reject) =>
          setTimeout(
            () => reject(new CliError(`cannot reach etcd at ${endpoints.join(',')} within 10s`)),
            10_000,
          ).unref(),
        );
        store = await Promise.race([core.createEtcdStore({ endpoints, prefix: o.etcdPrefix }), timeout]);
        await Promise.race([store.resourceVersion(), timeout]);
      } else if (o.dataDir) store = await core.createFileStore({ dir: o.dataDir });
      else store = await core.createMemoryStore();
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`cannot open the store: ${(err as Error).message.split('\n')[0]}`);
    }
    for (const obj of objects) {
      try {
        await store.create(obj);
      } catch (err) {
        if ((err as { reason?: string }).reason === 'AlreadyExists') continue;
        throw new CliError(`--load: ${obj.kind} "${obj.metadata?.name}": ${(err as Error).message}`);
      }
    }
    let sched: Scheduler;
    try {
      sched = new Scheduler({ store, config, plugins });
    } catch (err) {
      asConfigError(err);
    }
    const events = await store.watch('Event', {});
    void (async () => {
      for await (const ev of events) {
        if (ev.type !== 'ADDED') continue;
        const e = ev.object as core.Event;
        process.stdout.write(
          `${JSON.stringify({ pod: `${e.involvedObject.namespace}/${e.involvedObject.name}`, type: e.type, reason: e.reason, message: e.message })}\n`,
        );
      }
    })();
    await sched.start();
    const stop = async () => {
      events.stop();
      await sched.stop();
      await store.close();
    };
    if (o.once) {
      // Done when nothing is active or backing off and every binding finished.
      for (;;) {
        await new Promise((r) => setTimeout(r, 50));
        const st = sched.queue.stats();
        if (st.active === 0 && st.backoff === 0) {
          await sched.flushBindings();
          if (sched.queue.stats().active === 0) break;
        }
      }
      await new Promise((r) => setTimeout(r, 20));
      await stop();
      return;
    }
    await new Promise<void>((res) => {
      process.once('SIGINT', res);
      process.once('SIGTERM', res);
    });
    await stop();
  });

program.parseAsync(process.argv).catch((err) => {
  const msg =
    err instanceof CliError || err instanceof SimulationInputError
      ? err.message
      : `internal error: ${(err as Error).message}`;
  process.stderr.write(`error: ${msg}\n`);
  process.exit(1);
});
