#!/usr/bin/env node
// Process start-up cost of the kemu plugin executables, against bare `node -e 0` and the reference
// plugins in /usr/lib/cni, all measured by hyperfine in one run:
//   VERSION      kemu-loopback, kemu-host-local, kemu-bridge, kemu-portmap (no native module, no file work)
//   host-local   ADD of one address into an emptied dataDir (reference host-local vs kemu-host-local:
//                the path of an IPAM delegated to by a reference bridge)
//   bridge       ADD (bridge + host-local) into a fresh pod namespace, run with `ip netns exec` in a
//                throwaway namespace that plays the node, next to `node -e 0` under the same wrapper
//                (root only; add-del.mjs has the interleaved ADD/DEL latency distribution)
//
//   node tools/bench/cni/startup.mjs [--rounds 11] [--runs 3] [--warmup 2] [--json FILE]
//
// hyperfine runs each command's runs back to back, so on a busy machine load drifting between commands
// skews the comparison; this runs `--rounds` hyperfine rounds over all commands and reports, per command,
// the median over rounds of the median wall time and of the mean CPU time (user+sys) and, for kemu, the
// overhead over `node -e 0` in both.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBuilt, kemuBinDir, median, ms, repo } from './common.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '11' },
    runs: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '2' },
    json: { type: 'string', default: path.join(repo, '.bench-out', 'cni-startup.json') },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log('usage: node tools/bench/cni/startup.mjs [--rounds 11] [--runs 3] [--warmup 2] [--json FILE]');
  process.exit(0);
}
if (spawnSync('hyperfine', ['--version']).status !== 0) {
  console.error('startup benchmark needs hyperfine (apt-get install -y hyperfine)');
  process.exit(1);
}
ensureBuilt();

const REF = '/usr/lib/cni';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-startup-'));
const bin = kemuBinDir(path.join(tmp, 'bin'));
const data = path.join(tmp, 'ipam');
const confFile = (name, type) => {
  const f = path.join(tmp, `${name}.json`);
  writeFileSync(f, JSON.stringify({ cniVersion: '1.0.0', name, type, ipam: { type, subnet: '10.230.0.0/16', dataDir: data } }));
  return f;
};
const refConf = confFile('startup-ref', 'host-local');
const kemuConf = confFile('startup-kemu', 'kemu-host-local');
const empty = path.join(tmp, 'empty.json');
writeFileSync(empty, '{}');
const addEnv = `CNI_COMMAND=ADD CNI_CONTAINERID=startup CNI_NETNS=/proc/self/ns/net CNI_IFNAME=eth0 CNI_PATH=${bin}:${REF}`;

// Each command runs through hyperfine's shell (stdin redirection needs one); hyperfine subtracts the
// shell's own start-up, measured in the same run.
const commands = [
  ['node -e 0', `${process.execPath} -e 0`],
  ['reference loopback VERSION', `CNI_COMMAND=VERSION ${REF}/loopback < ${empty}`],
  ['kemu-loopback VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-loopback < ${empty}`],
  ['kemu-host-local VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-host-local < ${empty}`],
  ['kemu-bridge VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-bridge < ${empty}`],
  ['kemu-portmap VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-portmap < ${empty}`],
  ['reference host-local ADD', `${addEnv} ${REF}/host-local < ${refConf}`],
  ['kemu-host-local ADD', `${addEnv} ${bin}/kemu-host-local < ${kemuConf}`],
];
const netns = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0;
const nodeNs = `kemu-bench-startup-${process.pid}`;
const podNs = `kemu-bench-startup-pod-${process.pid}`;
const bridgeRuns = [];
if (netns) {
  spawnSync('ip', ['netns', 'add', nodeNs]);
  spawnSync('ip', ['netns', 'exec', nodeNs, 'ip', 'link', 'set', 'lo', 'up']);
  const brConf = (name, type, ipam, br, subnet) => {
    const f = path.join(tmp, `${name}.json`);
    writeFileSync(
      f,
      JSON.stringify({ cniVersion: '1.0.0', name, type, bridge: br, isGateway: true, ipMasq: false, ipam: { type: ipam, subnet, dataDir: data } }),
    );
    return f;
  };
  const env = `CNI_COMMAND=ADD CNI_CONTAINERID=startup CNI_NETNS=/var/run/netns/${podNs} CNI_IFNAME=eth0 CNI_PATH=${bin}:${REF}`;
  const inNode = `ip netns exec ${nodeNs}`;
  bridgeRuns.push(
    ['node -e 0 (in netns)', `${inNode} ${process.execPath} -e 0`],
    ['reference bridge ADD', `${inNode} env ${env} ${REF}/bridge < ${brConf('startup-refbr', 'bridge', 'host-local', 'sref0', '10.231.0.0/16')}`],
    ['kemu-bridge ADD', `${inNode} env ${env} ${bin}/kemu-bridge < ${brConf('startup-kemubr', 'kemu-bridge', 'kemu-host-local', 'skemu0', '10.232.0.0/16')}`],
  );
} else {
  console.warn('skipping the bridge ADD rows: they need root and iproute2');
}
const hfJson = path.join(tmp, 'hyperfine.json');
const base = ['--warmup', values.warmup, '--runs', values.runs, '--style', 'basic', '--export-json', hfJson];
// Every ADD starts from an empty dataDir (and a bridge ADD from a new pod namespace: deleting the old one
// removes its veth and with it the host end), so each run does the same work.
// Each group runs with its own preparation: the pod namespace churn the bridge rows need costs the
// processes running next to it CPU, so the other rows never share a hyperfine run with it.
const groups = [
  { prepare: `rm -rf ${data}`, cmds: commands },
  ...(netns ? [{ prepare: `ip netns del ${podNs} 2>/dev/null; rm -rf ${data}; ip netns add ${podNs}`, cmds: bridgeRuns }] : []),
];
const rounds = [];
for (let i = 0; i < Number(values.rounds); i++) {
  const round = {};
  for (const g of groups) {
    // Each round starts at another command, so no command always runs first or last in a round.
    const order = [...g.cmds.slice(i % g.cmds.length), ...g.cmds.slice(0, i % g.cmds.length)];
    const args = [...base, '--prepare', g.prepare];
    for (const [name, cmd] of order) args.push('-n', name, cmd);
    // A plain environment for every command: variables such as NODE_EXTRA_CA_CERTS (read at every Node
    // start) would weigh on node -e 0 and the plugins alike and blur the difference measured here.
    const r = spawnSync('hyperfine', args, { stdio: ['ignore', 'ignore', 'inherit'], env: { PATH: process.env.PATH, HOME: process.env.HOME } });
    if (r.status !== 0) break;
    for (const x of JSON.parse(readFileSync(hfJson, 'utf8')).results) round[x.command] = x;
  }
  if (Object.keys(round).length < commands.length + bridgeRuns.length) break;
  rounds.push(round);
}
if (netns) {
  spawnSync('ip', ['netns', 'del', podNs]);
  spawnSync('ip', ['netns', 'del', nodeNs]);
}
if (rounds.length < Number(values.rounds)) {
  console.error('hyperfine failed (a command exited non-zero?)');
  process.exit(1);
}
const wall = (n) => median(rounds.map((by) => by[n].median * 1000));
const cpu = (n) => median(rounds.map((by) => (by[n].user + by[n].system) * 1000));
const node0 = 'node -e 0';
const out = { rounds: rounds.length, runs: Number(values.runs), node: process.version, commands: {} };
console.log(
  `\nplugin start-up, ${rounds.length} rounds x ${values.runs} runs (median over rounds of wall p50 and of mean CPU user+sys; ms)\n`,
);
console.log('command                         wall p50   cpu   wall-node  cpu-node');
for (const [name] of [...commands, ...bridgeRuns]) {
  const row = { wallP50: wall(name), cpu: cpu(name) };
  let extra = '';
  if (name.startsWith('kemu')) {
    const base = name === 'kemu-bridge ADD' ? 'node -e 0 (in netns)' : node0;
    row.wallOverNode = wall(name) - wall(base);
    row.cpuOverNode = cpu(name) - cpu(base);
    extra = `${ms(row.wallOverNode).padStart(9)}  ${ms(row.cpuOverNode).padStart(8)}`;
  }
  out.commands[name] = row;
  console.log(`${name.padEnd(30)} ${ms(row.wallP50).padStart(9)} ${ms(row.cpu).padStart(6)}  ${extra}`);
}
const budget = wall(node0) + wall('reference host-local ADD');
out.hostLocalAddBudget = budget;
console.log(
  `\nkemu-host-local ADD ${ms(wall('kemu-host-local ADD'))} vs node -e 0 + reference host-local ADD ${ms(budget)} -> ${wall('kemu-host-local ADD') <= budget ? 'within' : 'over'}`,
);
if (netns) {
  const n = 'node -e 0 (in netns)';
  const b = wall(n) + wall('reference bridge ADD');
  out.bridgeAddBudget = b;
  console.log(
    `kemu-bridge ADD ${ms(wall('kemu-bridge ADD'))} vs node -e 0 + reference bridge ADD ${ms(b)} -> ${wall('kemu-bridge ADD') <= b ? 'within' : 'over'}` +
      ` (CPU: kemu ${ms(cpu('kemu-bridge ADD') - cpu(n))} over node; reference ${ms(cpu('reference bridge ADD'))} in all, wrapper included)`,
  );
}
mkdirSync(path.dirname(values.json), { recursive: true });
writeFileSync(values.json, JSON.stringify(out, null, 2));
rmSync(tmp, { recursive: true, force: true });
