// The sim backend's built-in network: bridge + host-local run in process on a simulated datapath, so a
// pod gets a namespace, a veth and an address in a netsim world, and two pods can ping each other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimDefaultNetwork } from './network-sim.js';
import { cri } from '@kemu/proto';
import { containerConfig, podConfig, startTestShim, type TestShim } from './test-util.js';

let shim: TestShim;

beforeAll(async () => {
  shim = await startTestShim();
});

afterAll(async () => {
  await shim?.close();
});

describe('sim default network', () => {
  it('wires pods into a simulated bridge where they reach each other, and removes them on stop', async () => {
    const net = shim.server.runtime.network as SimDefaultNetwork;
    expect(net.name).toContain('netsim');
    const a = (await shim.call('RunPodSandbox', { config: podConfig(shim.dir) })).podSandboxId!;
    const b = (await shim.call('RunPodSandbox', { config: podConfig(shim.dir) })).podSandboxId!;
    const sa = await shim.call('PodSandboxStatus', { podSandboxId: a, verbose: true });
    const sb = await shim.call('PodSandboxStatus', { podSandboxId: b });
    const nsA = JSON.parse(sa.info!.info).netNamespacePath as string;
    const addrs = (await net.datapath.listAddrs(nsA, 'eth0')).filter((x) => x.family === 4);
    expect(addrs.map((x) => x.cidr)).toEqual([`${sa.status!.network!.ip}/16`]);
    expect((await net.datapath.getLink('host', 'kemu0'))?.kind).toBe('bridge');
    const ping = await net.datapath.withWorld((w) => w.ping(nsA, sb.status!.network!.ip!));
    expect(ping.reachable).toBe(true);
    const stats = (await shim.call('PodSandboxStats', { podSandboxId: a })).stats!;
    expect(stats.linux!.network!.defaultInterface!.name).toBe('eth0');
    await shim.call('StopPodSandbox', { podSandboxId: a });
    expect(await net.datapath.netnsExists(nsA)).toBe(false);
    const nsB = JSON.parse((await shim.call('PodSandboxStatus', { podSandboxId: b, verbose: true })).info!.info).netNamespacePath;
    const after = await net.datapath.withWorld((w) => w.ping(nsB, sa.status!.network!.ip!));
    expect(after.reachable).toBe(false);
    await shim.call('RemovePodSandbox', { podSandboxId: a });
    await shim.call('RemovePodSandbox', { podSandboxId: b });
  });

  it("answers on the pod's declared ports once a container runs, and only on those", async () => {
    const net = shim.server.runtime.network as SimDefaultNetwork;
    await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
    const config = podConfig(shim.dir, {
      portMappings: [
        { protocol: cri.Protocol.TCP, containerPort: 8080, hostPort: 0 },
        { protocol: cri.Protocol.UDP, containerPort: 53, hostPort: 0 },
      ],
    });
    const server = (await shim.call('RunPodSandbox', { config })).podSandboxId!;
    const client = (await shim.call('RunPodSandbox', { config: podConfig(shim.dir) })).podSandboxId!;
    const ip = (await shim.call('PodSandboxStatus', { podSandboxId: server })).status!.network!.ip!;
    const from = JSON.parse((await shim.call('PodSandboxStatus', { podSandboxId: client, verbose: true })).info!.info)
      .netNamespacePath as string;
    const connect = (port: number) => net.datapath.withWorld((w) => w.tcpConnect(from, ip, port), { write: true });
    // No container runs yet: nothing answers.
    expect((await connect(8080)).state).toBe('refused');
    const cid = (
      await shim.call('CreateContainer', {
        podSandboxId: server,
        config: containerConfig({ command: ['sleep', 'infinity'] }),
        sandboxConfig: config,
      })
    ).containerId!;
    await shim.call('StartContainer', { containerId: cid });
    expect((await connect(8080)).state).toBe('established');
    expect((await connect(8081)).state).toBe('refused');
    const udp = await net.datapath.withWorld((w) => w.udpSend(from, ip, 53, Buffer.from('q')), { write: true });
    expect(udp.delivered).toContain('/netns/');
    await shim.call('StopPodSandbox', { podSandboxId: server });
    await shim.call('RemovePodSandbox', { podSandboxId: server });
    await shim.call('RemovePodSandbox', { podSandboxId: client });
  });

  it('re-attaches recovered pods to a fresh simulated node after a restart, with the same IPs', async () => {
    const a = (await shim.call('RunPodSandbox', { config: podConfig(shim.dir) })).podSandboxId!;
    const ip = (await shim.call('PodSandboxStatus', { podSandboxId: a })).status!.network!.ip!;
    await shim.restart();
    const net = shim.server.runtime.network as SimDefaultNetwork;
    const st = await shim.call('PodSandboxStatus', { podSandboxId: a, verbose: true });
    expect(st.status!.network!.ip).toBe(ip);
    const ns = JSON.parse(st.info!.info).netNamespacePath as string;
    expect((await net.datapath.listAddrs(ns, 'eth0')).filter((x) => x.family === 4).map((x) => x.cidr)).toEqual([`${ip}/16`]);
    await shim.call('RemovePodSandbox', { podSandboxId: a });
  });
});
