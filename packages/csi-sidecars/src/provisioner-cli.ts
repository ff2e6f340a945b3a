#!/usr/bin/env node
import { Command, Option } from 'commander';
import { CapacityPublisher } from './capacity.js';
import {
  addCommonOptions,
  connect,
  fail,
  logError,
  ms,
  openStore,
  parseCount,
  parseDuration,
  runSidecar,
  waitForDriverName,
} from './cli-common.js';
import { ExternalProvisioner } from './provisioner.js';

const BIN = 'kemu-external-provisioner';

function featureGates(v: string, prev: Record<string, boolean> = {}): Record<string, boolean> {
  const out = { ...prev };
  for (const part of v.split(',').filter(Boolean)) {
    const m = /^([A-Za-z0-9]+)=(true|false)$/.exec(part.trim());
    if (!m) throw new Error(`--feature-gates "${part}": use Name=true|false`);
    out[m[1]!] = m[2] === 'true';
  }
  return out;
}

const program = addCommonOptions(
  new Command()
    .name(BIN)
    .description('CSI external-provisioner: dynamic provisioning and deletion of PersistentVolumes'),
  {
    timeout: '10s',
    leaseNote: 'Lease named after the driver',
  },
)
  .option('--volume-name-prefix <prefix>', 'prefix of volume and PV names', 'pvc')
  .option(
    '--volume-name-uuid-length <n>',
    'characters of the claim uid in names (-1: all)',
    (v) => Number.parseInt(v, 10),
    -1,
  )
  .addOption(
    new Option('--worker-threads <n>', 'claims and volumes processed at once')
      .default(100)
      .argParser(parseCount),
  )
  .addOption(
    new Option('--retry-interval-start <duration>', 'first retry delay after a failure')
      .default('1s')
      .argParser(parseDuration),
  )
  .addOption(
    new Option('--retry-interval-max <duration>', 'longest retry delay')
      .default('5m')
      .argParser(parseDuration),
  )
  .option('--extra-create-metadata', 'pass claim and PV name/namespace to CreateVolume', false)
  .option('--default-fstype <type>', 'filesystem type when the class names none', '')
  .option('--feature-gates <gates>', 'e.g. Topology=true', featureGates, {} as Record<string, boolean>)
  .option('--strict-topology', 'only the selected node as requisite topology', false)
  .option('--enable-capacity', 'publish CSIStorageCapacity objects from GetCapacity', false)
  .addOption(
    new Option('--capacity-poll-interval <duration>', 'how often capacity is asked again')
      .default('1m')
      .argParser(parseDuration),
  )
  .addOption(
    new Option('--capacity-threads <n>', 'GetCapacity calls in parallel').default(1).argParser(parseCount),
  )
  .option('--capacity-for-immediate-binding', 'also publish capacity for Immediate classes', false);

async function main(): Promise<void> {
  program.parse();
  const o = program.opts();
  if (!Number.isInteger(o.volumeNameUuidLength) || o.volumeNameUuidLength < -1)
    fail(BIN, '--volume-name-uuid-length must be -1 or more');
  let store: Awaited<ReturnType<typeof openStore>>;
  let conn: ReturnType<typeof connect>;
  try {
    store = await openStore(o.store);
    conn = connect(o.csiAddress, o.grpcClient);
  } catch (e) {
    fail(BIN, (e as Error).message);
  }
  const onError = logError(BIN, o.verbose);
  const prov = new ExternalProvisioner({
    store,
    csi: conn,
    driverName: o.driverName,
    workers: o.workerThreads,
    timeoutMs: ms(o.timeout),
    retryIntervalStartMs: ms(o.retryIntervalStart),
    retryIntervalMaxMs: ms(o.retryIntervalMax),
    volumeNamePrefix: o.volumeNamePrefix,
    volumeNameUuidLength: o.volumeNameUuidLength,
    extraCreateMetadata: o.extraCreateMetadata,
    defaultFsType: o.defaultFstype,
    topology: o.featureGates.Topology === true,
    strictTopology: o.strictTopology,
    onError,
  });
  const driverName = await waitForDriverName(BIN, conn, o.driverName, () => prov.info.driverName());
  prov.opts.driverName = driverName;
  const capacity = o.enableCapacity
    ? new CapacityPublisher({
        store,
        csi: conn,
        driverName,
        pollIntervalMs: ms(o.capacityPollInterval),
        threads: o.capacityThreads,
        forImmediateBinding: o.capacityForImmediateBinding,
        namespace: process.env.NAMESPACE ?? 'default',
        timeoutMs: ms(o.timeout),
        onError,
      })
    : undefined;
  const work = {
    start: async () => {
      await prov.start();
      await capacity?.start();
    },
    stop: async () => {
      await capacity?.stop();
      await prov.stop();
    },
  };
  runSidecar(BIN, o, { store, conn, leaseName: driverName }, work, `provisioning for ${driverName}`);
}

void main().catch((e) => fail(BIN, (e as Error).message));
