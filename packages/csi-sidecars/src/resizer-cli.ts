#!/usr/bin/env node
import { Command, Option } from 'commander';
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
import { ExternalResizer } from './resizer.js';

const BIN = 'kemu-external-resizer';

const program = addCommonOptions(
  new Command()
    .name(BIN)
    .description('CSI external-resizer: ControllerExpandVolume for grown PersistentVolumeClaims'),
  {
    timeout: '10s',
    leaseNote: 'Lease external-resizer-<driver>',
  },
)
  .addOption(new Option('--workers <n>', 'claims processed at once').default(10).argParser(parseCount))
  .addOption(
    new Option('--retry-interval-start <duration>', 'first retry delay after a failure')
      .default('1s')
      .argParser(parseDuration),
  )
  .addOption(
    new Option('--retry-interval-max <duration>', 'longest retry delay')
      .default('5m')
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
  const rs = new ExternalResizer({
    store,
    csi: conn,
    driverName: o.driverName,
    workers: o.workers,
    timeoutMs: ms(o.timeout),
    retryIntervalStartMs: ms(o.retryIntervalStart),
    retryIntervalMaxMs: ms(o.retryIntervalMax),
    onError: logError(BIN, o.verbose),
  });
  let driverName = o.driverName as string | undefined;
  while (!driverName) {
    try {
      driverName = await rs.info.driverName();
    } catch (e) {
      process.stderr.write(`${BIN}: still connecting to ${conn.address}: ${(e as Error).message}\n`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  rs.opts.driverName = driverName;
  const handle = runWithLeaderElection(
    {
      enabled: o.leaderElection,
      store,
      leaseName: `external-resizer-${driverName}`,
      namespace: o.leaderElectionNamespace,
      leaseDurationMs: ms(o.leaderElectionLeaseDuration),
      renewDeadlineMs: ms(o.leaderElectionRenewDeadline),
      retryPeriodMs: ms(o.leaderElectionRetryPeriod),
    },
    rs,
    () => fail(BIN, 'lost the leader election lease; exiting so a restart can contend again'),
  );
  process.stderr.write(`${BIN}: resizing for ${driverName} through ${conn.address}\n`);
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
