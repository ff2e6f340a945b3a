// The pod's /etc/hosts as the kubelet manages it: localhost entries, the pod's own name on each pod IP
// (with its FQDN when it has a subdomain), then `spec.hostAliases`. Written once per pod into its directory
// and bind-mounted into every container that does not mount /etc/hosts itself (not for host-network pods,
// which see the node's file).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Container, Pod } from '@kemu/core';
import type { cri } from '@kemu/proto';
import { onMemoryFilesystem } from '@kemu/safe-fs';

const HEADER = '# Kubernetes-managed hosts file.\n';
/** The callback writeFile: fs/promises' writeFile goes through a FileHandle and costs the event loop several times more per file. */
const writeFile = promisify(fs.writeFile);
const LOCAL = [
  '127.0.0.1\tlocalhost',
  '::1\tlocalhost ip6-localhost ip6-loopback',
  'fe00::0\tip6-localnet',
  'fe00::0\tip6-mcastprefix',
  'fe00::1\tip6-allnodes',
  'fe00::2\tip6-allrouters',
];

/** The pod's hostname (spec.hostname, else its name, cut to 63) and its domain when it has a subdomain. */
export function podHostnameAndDomain(pod: Pod, clusterDomain: string): { hostname: string; domain?: string } {
  const hostname = pod.spec.hostname || (pod.metadata.name ?? '').slice(0, 63).replace(/[-.]+$/, '');
  const domain = pod.spec.subdomain ? `${pod.spec.subdomain}.${pod.metadata.namespace ?? 'default'}.svc.${clusterDomain}` : undefined;
  return { hostname, domain };
}

export function managedHostsFileContent(pod: Pod, podIPs: string[], clusterDomain: string): string {
  const { hostname, domain } = podHostnameAndDomain(pod, clusterDomain);
  let out = HEADER + LOCAL.map((l) => `${l}\n`).join('');
  for (const ip of podIPs) out += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  const aliases = pod.spec.hostAliases ?? [];
  if (aliases.length) {
    out += '\n# Entries added by HostAliases.\n';
    for (const a of aliases) out += `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`;
  }
  return out;
}

/**
 * The /etc/hosts mount for a container, writing the file under `podDir` first; undefined when the pod uses
 * the host network or the container mounts /etc/hosts itself. The kubelet does this for every container it
 * starts, so the writes go off the event loop, unless the pods' directory is on a memory file system, where
 * they wait for no disk and the synchronous calls cost the loop several times less.
 */
export async function hostsFileMount(pod: Pod, c: Container, podDir: string, podIPs: string[], clusterDomain: string): Promise<cri.Mount | undefined> {
  if (pod.spec.hostNetwork || !podIPs.length) return undefined;
  if ((c.volumeMounts ?? []).some((m) => path.posix.normalize(m.mountPath) === '/etc/hosts')) return undefined;
  const file = path.join(podDir, 'etc-hosts');
  const content = managedHostsFileContent(pod, podIPs, clusterDomain);
  if (onMemoryFilesystem(path.dirname(podDir))) writeHostsFileSync(podDir, file, content);
  else await writeHostsFile(podDir, file, content);
  return { containerPath: '/etc/hosts', hostPath: file, readonly: false, selinuxRelabel: false, propagation: 0 };
}

// The first write of a pod's file creates it in place (O_EXCL: no container of the pod runs yet, so nobody
// can read half of it, and nothing already there is followed or overwritten). A later write (another
// container of the pod, a restarted kubelet) finds the file and replaces it with a rename, so a container
// already running never sees half a file.
const CREATE_NEW = { mode: 0o644, flag: 'wx' } as const;

function writeHostsFileSync(podDir: string, file: string, content: string): void {
  fs.mkdirSync(podDir, { recursive: true, mode: 0o750 });
  try {
    fs.writeFileSync(file, content, CREATE_NEW);
    return;
  } catch (err) {
    if (codeOf(err) !== 'EEXIST') throw err;
  }
  fs.writeFileSync(`${file}.tmp`, content, { mode: 0o644 });
  fs.renameSync(`${file}.tmp`, file);
}

async function writeHostsFile(podDir: string, file: string, content: string): Promise<void> {
  await fsp.mkdir(podDir, { recursive: true, mode: 0o750 });
  try {
    await writeFile(file, content, CREATE_NEW);
    return;
  } catch (err) {
    if (codeOf(err) !== 'EEXIST') throw err;
  }
  await writeFile(`${file}.tmp`, content, { mode: 0o644 });
  await fsp.rename(`${file}.tmp`, file);
}

const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | null)?.code;
