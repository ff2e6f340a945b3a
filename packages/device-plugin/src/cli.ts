#!/usr/bin/env node
// kemu-device-plugin: serves simulated devices (--count) or the host's NVIDIA GPUs (--nvidia, through
// nvidia-smi) to the kubelet whose device-plugins directory is --plugin-dir.
import fs from 'node:fs';
import os from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import { DEVICE_PLUGIN_PATH, HEALTHY, UNHEALTHY } from './constants.js';
import type { DeviceInfo } from './devices.js';
import { simDevices } from './devices-sim.js';
import { discoverNvidiaGpus } from './nvidia-smi.js';
import { DevicePluginServer } from './server.js';

function int(v: string): number {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('not a whole number');
  return Number(v);
}

/** Health overrides from a file of `<device-id> Healthy|Unhealthy` lines (for failure drills). */
function readHealthFile(file: string): Map<string, 'Healthy' | 'Unhealthy'> {
  const out = new Map<string, 'Healthy' | 'Unhealthy'>();
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const [id, health] = line.trim().split(/\s+/);
    if (id && (health === HEALTHY || health === UNHEALTHY)) out.set(id, health);
  }
  return out;
}

const program = new Command()
  .name('kemu-device-plugin')
  .description('a Kubernetes device plugin (API v1beta1) for simulated devices or NVIDIA GPUs')
  .option('--resource <name>', 'extended resource to advertise', 'nvidia.com/gpu')
  .option('--count <n>', 'simulated devices to serve', int, 8)
  .option('--model <name>', 'model of the simulated devices', 'H100')
  .option('--numa-nodes <n>', 'NUMA nodes the simulated devices spread over', int, 1)
  .option('--seed <text>', 'seed for the simulated device IDs (default: host name)')
  .option('--nvidia', 'serve the GPUs nvidia-smi reports instead of simulated ones')
  .option('--nvidia-smi <path>', 'the nvidia-smi to run', 'nvidia-smi')
  .option('--pass-device-specs', 'with --nvidia: also hand out the /dev/nvidia* nodes')
  .option('--rediscover-ms <ms>', 'with --nvidia: how often to query nvidia-smi for health', int, 30_000)
  .option('--health-file <path>', 'lines of "<device-id> Healthy|Unhealthy" that override health, re-read on change')
  .option('--allocate-delay-ms <ms>', 'hold each Allocate this long (failure drills)', int, 0)
  .option('--plugin-dir <dir>', "the kubelet's device-plugins directory", DEVICE_PLUGIN_PATH)
  .option('--socket-name <name>', 'socket file name in the plugin dir')
  .option('--watch-ms <ms>', 'how often to look for a restarted kubelet', int, 1000)
  .action(async (o) => {
    const log = (line: string) => process.stderr.write(`kemu-device-plugin: ${line}\n`);
    const discover = (): Promise<DeviceInfo[]> =>
      o.nvidia
        ? discoverNvidiaGpus({ bin: o.nvidiaSmi, passDeviceSpecs: !!o.passDeviceSpecs })
        : Promise.resolve(simDevices({ count: o.count, model: o.model, numaNodes: o.numaNodes, seed: o.seed ?? os.hostname() }));
    let base = await discover();
    const withHealth = (devices: DeviceInfo[]) => {
      const over = o.healthFile ? readHealthFile(o.healthFile) : new Map();
      return devices.map((d) => ({ ...d, health: over.get(d.id) ?? d.health }));
    };
    const plugin = new DevicePluginServer({ resourceName: o.resource, pluginDir: o.pluginDir, socketName: o.socketName, devices: withHealth(base), allocateDelayMs: o.allocateDelayMs, watchMs: o.watchMs, log });
    await plugin.start();
    const timers: NodeJS.Timeout[] = [];
    if (o.healthFile) {
      fs.watchFile(o.healthFile, { interval: 200 }, () => plugin.setDevices(withHealth(base)));
    }
    if (o.nvidia) {
      // A GPU that vanishes from nvidia-smi, or nvidia-smi failing, makes devices unhealthy.
      timers.push(
        setInterval(async () => {
          try {
            const now = await discover();
            const ids = new Set(now.map((d) => d.id));
            base = [...now, ...base.filter((d) => !ids.has(d.id)).map((d) => ({ ...d, health: UNHEALTHY as 'Unhealthy' }))];
          } catch (err) {
            log(`${(err as Error).message}: marking every GPU unhealthy`);
            base = base.map((d) => ({ ...d, health: UNHEALTHY as 'Unhealthy' }));
          }
          plugin.setDevices(withHealth(base));
        }, o.rediscoverMs),
      );
    }
    const stop = async () => {
      for (const t of timers) clearInterval(t);
      if (o.healthFile) fs.unwatchFile(o.healthFile);
      await plugin.stop();
      process.exit(0);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

program.parseAsync().catch((err) => {
  process.stderr.write(`kemu-device-plugin: ${(err as Error).message}\n`);
  process.exit(1);
});
