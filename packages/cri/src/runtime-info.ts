// Runtime-wide RPCs: Version, Status, RuntimeConfig and UpdateRuntimeConfig.
import path from 'node:path';
import { cri } from '@kemu/proto';
import { invalidArgument } from './errors.js';
import type { RuntimeContext } from './runtime-context.js';
import { writeFileAtomicSync } from './state-store.js';

export const RUNTIME_NAME = 'kemu';
export const RUNTIME_VERSION = '0.1.0';
export const CRI_API_VERSION = 'v1';

export function version(_req: cri.VersionRequest): cri.VersionResponse {
  return { version: '0.1.0', runtimeName: RUNTIME_NAME, runtimeVersion: RUNTIME_VERSION, runtimeApiVersion: CRI_API_VERSION };
}

export function status(ctx: RuntimeContext, req: cri.StatusRequest): cri.StatusResponse {
  const net = ctx.network.status();
  const res: cri.StatusResponse = {
    status: {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: net.ready, reason: net.ready ? '' : net.reason, message: net.ready ? '' : net.message },
      ],
    },
    info: {},
    runtimeHandlers: [...ctx.handlers].map((name) => ({
      name,
      features: { recursiveReadOnlyMounts: false, userNamespaces: false },
    })),
    // The runc backend resolves groups from the image and honours the Strict policy.
    features: { supplementalGroupsPolicy: ctx.backend.name === 'runc' },
  };
  if (req.verbose) {
    res.info = {
      config: JSON.stringify({
        backend: ctx.backend.info(),
        network: ctx.network.name,
        podCidr: ctx.podCidr,
        runtimeHandlers: [...ctx.handlers],
        allowedLogRoots: ctx.logRoots,
        stateDir: ctx.state.dir ?? null,
      }),
    };
  }
  return res;
}

export function runtimeConfig(): cri.RuntimeConfigResponse {
  return { linux: { cgroupDriver: cri.CgroupDriver.CGROUPFS } };
}

export async function updateRuntimeConfig(ctx: RuntimeContext, req: cri.UpdateRuntimeConfigRequest): Promise<cri.UpdateRuntimeConfigResponse> {
  const cidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
  if (!cidr) return {};
  for (const one of cidr.split(',')) {
    if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(one.trim())) {
      throw invalidArgument(`invalid pod CIDR ${JSON.stringify(one)}: want an address/prefix such as 10.244.0.0/24`);
    }
  }
  await ctx.network.updatePodCidr(cidr);
  ctx.podCidr = cidr;
  // Kept so a restarted shim re-attaches recovered pods in the same range before kubelet calls again.
  if (ctx.state.dir) writeFileAtomicSync(path.join(ctx.state.dir, 'runtime-config.json'), JSON.stringify({ podCidr: cidr }));
  return {};
}
