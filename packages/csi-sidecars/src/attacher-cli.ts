#!/usr/bin/env node
import { Command, Option } from 'commander';
import { ExternalAttacher } from './attacher.js';
import {
  addCommonOptions,
  connect,
  fail,
  logError,
  ms,
  openStore,
  parseCount,
  parseDuration,
} from './cli-common.js';
import { runWithLeaderElection } from './leader.js';

const BIN = 'kemu-external-attacher';

const program = addCommonOptions(
  new Command()
    .name(BIN)
    .description('CSI external-attacher: ControllerPublish/UnpublishVolume for VolumeAttachments'),
  {
    timeout: '15s',
    leaseNote: 'Lease external-attacher-leader-<driver>',
  },
)
  .addOption(
    new Option('--worker-threads <n>', 'attachments processed at once').default(10).argParser(parseCount),
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
  .addOption(
    new Option('--resync <duration>', 'periodic re-check of every attachment')
      .default('10m')
      .argParser(parseDuration),
  );

async function main(): Promise<void> {
  program.parse();
  const o = program.opts();
  let store: Awaited<ReturnType<typeof openStore>>;
  let conn: ReturnType<typeof connect>;
  try {
    store = await openStore(o.store);
    conn = connect(o.csiAddress);
  } catch (e) {
    fail(BIN, (e as Error).message);
  }
  const att = new ExternalAttacher({
    store,
    csi: conn,
    driverName: o.driverName,
    workers: o.workerThreads,
    timeoutMs: ms(o.timeout),
    retryIntervalStartMs: ms(o.retryIntervalStart),
    retryIntervalMaxMs: ms(o.retryIntervalMax),
    resyncPeriodMs: ms(o.resync),
    onError: logError(BIN, o.verbose),
  });
  let driverName = o.driverName as string | undefined;
  while (!driverName) {
    try {
      driverName = await att.info.driverName();
    } catch (e) {
      process.stderr.write(`${BIN}: still connecting to ${conn.address}: ${(e as Error).message}\n`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  att.opts.driverName = driverName;
  const handle = runWithLeaderElection(
    {
      enabled: o.leaderElection,
      store,
      leaseName: `external-attacher-leader-${driverName}`,
      namespace: o.leaderElectionNamespace,
      leaseDurationMs: ms(o.leaderElectionLeaseDuration),
      renewDeadlineMs: ms(o.leaderElectionRenewDeadline),
      retryPeriodMs: ms(o.leaderElectionRetryPeriod),
    },
    att,
    () => fail(BIN, 'lost the leader election lease; exiting so a restart can contend again'),
  );
  process.stderr.write(`${BIN}: attaching for ${driverName} through ${conn.address}\n`);
  const stop = async () => {
    await handle.stop();
    conn.close();
    await store.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main().catch((e) => fail(BIN, (e as Error).message));
