#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from 'commander';
import { SIM_OPERATIONS, type SimFailure, type SimOperation } from './backend-sim.js';
import { ALPHA_CAPABILITIES, ALPHA_CAPABILITY_NAMES } from './capabilities.js';
import { DEFAULT_DRIVER_NAME, DEFAULT_TOPOLOGY_KEY, DRIVER_VERSION } from './driver.js';
import { parseCode } from './errors.js';
import { stderrLogger } from './logging.js';
import { parseSize } from './quantity.js';
import { serveCsiDriver } from './server.js';
import { checkDriverName, checkIdentifier } from './validate.js';

const size = (v: string) => {
  try {
    return parseSize(v);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
};
const count = (v: string) => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a whole number');
  return Number(v);
};
const collect = (v: string, prev: string[] = []) => [...prev, v];
const simOp = (op: string): SimOperation => {
  if (!SIM_OPERATIONS.includes(op as SimOperation)) {
    throw new InvalidArgumentError(`unknown operation "${op}"; one of ${SIM_OPERATIONS.join(', ')}`);
  }
  return op as SimOperation;
};

const program = new Command()
  .name('kemu-csi')
  .description('CSI v1 driver (Identity, Controller, Node, GroupController) with hostpath and sim backends')
  .version(DRIVER_VERSION)
  .option('--endpoint <endpoint>', 'CSI endpoint, unix:///path/csi.sock (default: $CSI_ENDPOINT)')
  .requiredOption(
    '--node-id <name>',
    "this node's id, as reported by NodeGetInfo",
    process.env.KUBE_NODE_NAME,
  )
  .addOption(
    new Option('--backend <kind>', 'where volumes live').choices(['hostpath', 'sim']).default('hostpath'),
  )
  .option('--state-dir <dir>', 'state and hostpath data directory', '/var/lib/kemu-csi')
  .option('--drivername <name>', 'CSI driver name', DEFAULT_DRIVER_NAME)
  .addOption(
    new Option('--capacity <size>', 'total capacity handed out')
      .argParser(size)
      .default(parseSize('100Gi'), '100Gi'),
  )
  .option('--max-volume-size <size>', 'largest single volume (default: the capacity)', size)
  .option('--max-volumes-per-node <n>', 'volumes one node may hold (0: unlimited)', count, 0)
  .option('--enable-attach', 'advertise and require ControllerPublishVolume', false)
  .option('--topology-key <key>', 'topology segment key reported for this node', DEFAULT_TOPOLOGY_KEY)
  .option(
    '--path-root <dir>',
    'allowed root for staging/target paths (repeatable; default /var/lib/kubelet)',
    collect,
  )
  .option('--registration-dir <dir>', 'kubelet plugin registry dir; serves <drivername>-reg.sock there')
  .option('--kubelet-registration-path <path>', 'CSI socket path as the kubelet sees it')
  .option('--no-mounts', 'hostpath: link targets instead of bind-mounting them (the default when not root)')
  .option(
    '--sim-persist',
    'sim: keep driver state in <state-dir>/state.json across restarts (otherwise memory only)',
  )
  .option(
    '--sim-latency <op=ms>',
    'sim: delay an operation (or all, with a bare number of ms); repeatable',
    collect,
  )
  .option(
    '--sim-fail <op=CODE[:times]>',
    'sim: fail an operation with a gRPC code, e.g. createVolume=RESOURCE_EXHAUSTED:2',
    collect,
  )
  .option('-v, --verbose', 'log every call, not only failures', false)
  .addOption(
    new Option('--grpc-engine <engine>', 'gRPC server: http2 (the lean node:http2 engine) or grpc-js (default: $KEMU_GRPC_ENGINE or http2)').choices(['http2', 'grpc-js']),
  )
  // usage errors exit 2 like our own checks; --help and --version exit 0
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

// One flag per alpha capability of CSI v1.12, each off by default: peers built for an older spec reject
// capability values they do not know.
const alphaOptions = ALPHA_CAPABILITY_NAMES.map((name) => {
  const opt = new Option(`--enable-${name}`, `alpha, off by default: advertise and serve ${ALPHA_CAPABILITIES[name].help}`);
  program.addOption(opt);
  return { name, key: opt.attributeName() };
});
program.addHelpText(
  'after',
  '\nAlpha capabilities: CSI v1.12 marks GET_SNAPSHOT, GET_VOLUME, VOLUME_CONDITION and SINGLE_NODE_MULTI_WRITER\n' +
    'alpha. None is advertised unless its --enable-* flag is given: sidecars and test suites built for an older\n' +
    'spec reject capability values they do not know.\n',
);

function fail(msg: string): never {
  process.stderr.write(`kemu-csi: ${msg}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  program.parse();
  const o = program.opts();
  const endpoint: string | undefined = o.endpoint ?? process.env.CSI_ENDPOINT;
  if (!endpoint) fail('no endpoint: pass --endpoint unix:///path/csi.sock or set CSI_ENDPOINT');
  try {
    checkIdentifier('--node-id', o.nodeId);
    checkDriverName(o.drivername);
  } catch (e) {
    fail((e as Error).message);
  }
  let latencyMs: number | Partial<Record<SimOperation, number>> | undefined;
  const failures: SimFailure[] = [];
  try {
    for (const spec of (o.simLatency as string[] | undefined) ?? []) {
      if (/^\d+$/.test(spec)) latencyMs = Number(spec);
      else {
        const [op, ms] = spec.split('=');
        if (!ms || !/^\d+$/.test(ms))
          throw new Error(`--sim-latency "${spec}": use op=ms, e.g. createVolume=5`);
        latencyMs = { ...(typeof latencyMs === 'object' ? latencyMs : {}), [simOp(op!)]: Number(ms) };
      }
    }
    for (const spec of (o.simFail as string[] | undefined) ?? []) {
      const m = /^(\w+)=(\w+)(?::(\d+))?$/.exec(spec);
      if (!m) throw new Error(`--sim-fail "${spec}": use op=CODE[:times], e.g. publish=UNAVAILABLE:1`);
      failures.push({ op: simOp(m[1]!), code: parseCode(m[2]!), ...(m[3] ? { times: Number(m[3]) } : {}) });
    }
  } catch (e) {
    fail((e as Error).message);
  }
  let running: Awaited<ReturnType<typeof serveCsiDriver>>;
  try {
    running = await serveCsiDriver({
      endpoint,
      grpcEngine: o.grpcEngine,
      nodeId: o.nodeId,
      name: o.drivername,
      backend: o.backend,
      stateDir: o.stateDir,
      capacityBytes: o.capacity,
      maxVolumeSizeBytes: o.maxVolumeSize,
      maxVolumesPerNode: o.maxVolumesPerNode,
      enableAttach: o.enableAttach,
      alphaCapabilities: alphaOptions.filter((a) => o[a.key] === true).map((a) => a.name),
      topologyKey: o.topologyKey,
      pathRoots: o.pathRoot,
      registrationDir: o.registrationDir,
      kubeletRegistrationPath: o.kubeletRegistrationPath,
      useMounts: o.mounts === false ? false : undefined,
      sim: { latencyMs, failures },
      simPersist: o.simPersist,
      logger: stderrLogger(o.verbose),
    });
  } catch (e) {
    fail(`cannot start: ${(e as Error).message}`);
  }
  process.stderr.write(
    `kemu-csi: serving ${running.driver.name} (${running.backend.name} backend, node ${o.nodeId}) on ${running.socketPath}` +
      `${running.registrationSocketPath ? `, registration on ${running.registrationSocketPath}` : ''}\n`,
  );
  const stop = async () => {
    await running.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main();
