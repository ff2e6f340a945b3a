// RuntimeService handlers: thin adapters from RPCs to the runtime core. The returned object is what the
// gRPC server registers, and what an in-process caller (the composed cluster) can call directly.
import type { cri, ServiceHandlers } from '@kemu/proto';
import type { CriRuntime } from './runtime.js';

export type RuntimeServiceHandlers = Required<
  Omit<ServiceHandlers<cri.RuntimeServiceMethods>, 'CheckpointContainer' | 'UpdatePodSandboxResources'>
>;

async function* events(runtime: CriRuntime, call: { on(ev: 'cancelled' | 'close', fn: () => void): unknown } | undefined) {
  const queue: cri.ContainerEventResponse[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const onEvent = (ev: cri.ContainerEventResponse) => {
    queue.push(ev);
    wake?.();
  };
  const stop = () => {
    done = true;
    wake?.();
  };
  runtime.events.on('event', onEvent);
  runtime.events.once('close', stop);
  call?.on('cancelled', stop);
  try {
    while (!done) {
      if (queue.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      yield queue.shift()!;
    }
  } finally {
    runtime.events.off('event', onEvent);
    runtime.events.off('close', stop);
  }
}

/** Handlers for every RuntimeService RPC we implement; CheckpointContainer and UpdatePodSandboxResources answer UNIMPLEMENTED. */
export function createRuntimeService(runtime: CriRuntime): RuntimeServiceHandlers {
  return {
    Version: async (req) => runtime.version(req),
    RunPodSandbox: (req) => runtime.runPodSandbox(req),
    StopPodSandbox: (req) => runtime.stopPodSandbox(req),
    RemovePodSandbox: (req) => runtime.removePodSandbox(req),
    PodSandboxStatus: async (req) => runtime.podSandboxStatus(req),
    ListPodSandbox: async (req) => runtime.listPodSandbox(req),
    StreamPodSandboxes: async function* (req) {
      yield { podSandboxes: runtime.listPodSandbox({ filter: req.filter }).items };
    },
    CreateContainer: (req) => runtime.createContainer(req),
    StartContainer: (req) => runtime.startContainer(req),
    StopContainer: (req) => runtime.stopContainer(req),
    RemoveContainer: (req) => runtime.removeContainer(req),
    ListContainers: async (req) => runtime.listContainers(req),
    StreamContainers: async function* (req) {
      yield { containers: runtime.listContainers({ filter: req.filter }).containers };
    },
    ContainerStatus: async (req) => runtime.containerStatus(req),
    UpdateContainerResources: (req) => runtime.updateContainerResources(req),
    ReopenContainerLog: (req) => runtime.reopenContainerLog(req),
    ExecSync: (req) => runtime.execSync(req),
    Exec: async (req) => runtime.exec(req),
    Attach: async (req) => runtime.attach(req),
    PortForward: async (req) => runtime.portForward(req),
    ContainerStats: (req) => runtime.containerStats(req),
    ListContainerStats: (req) => runtime.listContainerStats(req),
    StreamContainerStats: async function* (req) {
      yield { containerStats: (await runtime.listContainerStats({ filter: req.filter })).stats };
    },
    PodSandboxStats: (req) => runtime.podSandboxStats(req),
    ListPodSandboxStats: (req) => runtime.listPodSandboxStats(req),
    StreamPodSandboxStats: async function* (req) {
      yield { podSandboxStats: (await runtime.listPodSandboxStats({ filter: req.filter })).stats };
    },
    UpdateRuntimeConfig: (req) => runtime.updateRuntimeConfig(req),
    Status: async (req) => runtime.status(req),
    GetContainerEvents: (_req, call) => events(runtime, call),
    ListMetricDescriptors: async () => runtime.listMetricDescriptors(),
    ListPodSandboxMetrics: () => runtime.listPodSandboxMetrics(),
    StreamPodSandboxMetrics: async function* () {
      yield { podSandboxMetrics: (await runtime.listPodSandboxMetrics()).podMetrics };
    },
    RuntimeConfig: async () => runtime.runtimeConfig(),
  };
}
