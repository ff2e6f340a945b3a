// The OCI runtime spec built from a CRI request and an image config (pure; no runtime needed).
import fs from 'node:fs';
import path from 'node:path';
import { cri } from '@kemu/proto';
import { describe, expect, it } from 'vitest';
import { ALL_CAPABILITIES, argsOf, buildSpec, capabilitiesOf, DEFAULT_CAPABILITIES, DEFAULT_MASKED_PATHS, type SpecInput } from './oci-spec.js';
import { tempDir } from './test-util.js';
import type { ContainerRecord, ImageRecord, SandboxRecord } from './types.js';

function input(over: { c?: Partial<cri.ContainerConfig>; sb?: Partial<cri.PodSandboxConfig>; image?: Partial<ImageRecord['config']> } = {}): SpecInput {
  const rootfs = tempDir('kemu-cri-spec-');
  fs.mkdirSync(path.join(rootfs, 'etc'));
  fs.writeFileSync(path.join(rootfs, 'etc/passwd'), 'root:x:0:0::/root:/bin/sh\nweb:x:33:33::/var/www:/bin/sh\n');
  fs.writeFileSync(path.join(rootfs, 'etc/group'), 'root:x:0:\nweb:x:33:\nlog:x:4:web\n');
  const sb = { id: 'sb', config: { metadata: { name: 'p' }, hostname: 'p', ...over.sb }, hostNetwork: false, netnsPath: '/run/netns/x', backend: { pidShared: false } } as unknown as SandboxRecord;
  const c = { id: 'c1', config: { metadata: { name: 'c' }, ...over.c }, resources: over.c?.linux?.resources ?? {} } as unknown as ContainerRecord;
  const image = { id: 'sha256:x', repoTags: ['img:1'], config: { entrypoint: ['/ep'], cmd: ['default'], env: ['PATH=/bin', 'A=1'], ...over.image } } as unknown as ImageRecord;
  return { sb, c, image, rootfs, sandboxFiles: { hosts: '/h', resolv: '/r', hostname: '/n' }, holderPid: 42, cgroupsPath: '/kemu-cri/sb/c1', minOomScoreAdj: 0 };
}

describe('buildSpec', () => {
  it('command replaces the entrypoint, args the cmd; none at all is INVALID_ARGUMENT', () => {
    expect(argsOf(input().c, input().image)).toEqual(['/ep', 'default']);
    const i = input({ c: { args: ['x'] } });
    expect(argsOf(i.c, i.image)).toEqual(['/ep', 'x']);
    const j = input({ c: { command: ['/bin/true'], args: ['y'] } });
    expect(argsOf(j.c, j.image)).toEqual(['/bin/true', 'y']);
    const k = input({ image: { entrypoint: undefined, cmd: undefined } });
    expect(() => buildSpec(k)).toThrow(/no command specified/);
  });

  it('merges env (request wins), resolves the image user and its groups, joins the pod namespaces', () => {
    const s = buildSpec(input({ c: { envs: [{ key: 'A', value: '2' }] }, image: { user: 'web' } }));
    expect(s.process.env).toEqual(['PATH=/bin', 'A=2', 'HOSTNAME=p']);
    expect(s.process.user).toEqual({ uid: 33, gid: 33, additionalGids: [33, 4] });
    expect(s.linux.namespaces).toEqual([
      { type: 'mount' },
      { type: 'network', path: '/run/netns/x' },
      { type: 'ipc', path: '/proc/42/ns/ipc' },
      { type: 'uts', path: '/proc/42/ns/uts' },
      { type: 'pid' },
    ]);
    expect(s.linux.maskedPaths).toEqual(DEFAULT_MASKED_PATHS);
    expect(s.linux.seccomp).toBeUndefined(); // no profile asked: unconfined, as the CRI field's default says
  });

  it('capabilities: defaults, add/drop, ALL; privileged needs a privileged pod and gets everything', () => {
    expect(capabilitiesOf(input().c)).toEqual(DEFAULT_CAPABILITIES);
    const sc = (capabilities: cri.Capability) => input({ c: { linux: { securityContext: { capabilities } } } }).c;
    expect(capabilitiesOf(sc({ dropCapabilities: ['ALL'], addCapabilities: ['NET_ADMIN'] }))).toEqual(['CAP_NET_ADMIN']);
    expect(capabilitiesOf(sc({ addCapabilities: ['ALL'] }))).toEqual(ALL_CAPABILITIES);
    expect(capabilitiesOf(sc({ dropCapabilities: ['chown'] }))).not.toContain('CAP_CHOWN');
    expect(() => capabilitiesOf(sc({ addCapabilities: ['FLY'] }))).toThrow(/unknown capability "CAP_FLY"/);
    expect(() => buildSpec(input({ c: { linux: { securityContext: { privileged: true } } } }))).toThrow(/privileged sandbox/);
    const p = buildSpec(input({ c: { linux: { securityContext: { privileged: true } } }, sb: { linux: { securityContext: { privileged: true } } } }));
    expect(p.process.capabilities.bounding).toEqual(ALL_CAPABILITIES);
    expect(p.linux.maskedPaths).toEqual([]);
  });

  it('never asks for an oom_score_adj below our own, and refuses host-wide sysctls', () => {
    const i = input({ c: { linux: { resources: { oomScoreAdj: -998 } } } });
    expect(buildSpec({ ...i, minOomScoreAdj: -100 }).process.oomScoreAdj).toBe(-100);
    expect(buildSpec(input({ sb: { linux: { sysctls: { 'net.ipv4.ip_forward': '1', 'kernel.shmmax': '1' } } } })).linux.sysctl).toEqual({ 'net.ipv4.ip_forward': '1', 'kernel.shmmax': '1' });
    expect(() => buildSpec(input({ sb: { linux: { sysctls: { 'vm.swappiness': '1' } } } }))).toThrow(/not namespaced/);
    expect(() => buildSpec(input({ sb: { linux: { sysctls: { 'net.core.somaxconn': '1' }, securityContext: { namespaceOptions: { network: cri.NamespaceMode.NODE } } } } }))).toThrow(
      /private network namespace/,
    );
  });

  it('RuntimeDefault seccomp refuses mount without CAP_SYS_ADMIN and allows it with; Localhost must be absolute', () => {
    const sec = (caps: string[]) =>
      buildSpec(input({ c: { linux: { securityContext: { seccomp: { profileType: cri.SecurityProfile_ProfileType.RuntimeDefault }, capabilities: { addCapabilities: caps } } } } })).linux.seccomp!;
    expect(sec([]).syscalls[0].names).toContain('mount');
    expect(sec(['SYS_ADMIN']).syscalls[0].names).not.toContain('mount');
    expect(sec(['SYS_ADMIN']).syscalls[0].names).toContain('kexec_load');
    expect(() => buildSpec(input({ c: { linux: { securityContext: { seccomp: { profileType: cri.SecurityProfile_ProfileType.Localhost, localhostRef: 'rel.json' } } } } }))).toThrow(/absolute/);
  });
});
