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
  // Written in place of a previous version with a rename, so a reader never sees half a file.
  const tmp = `${file}.tmp`;
  if (onMemoryFilesystem(path.dirname(podDir))) {
    fs.mkdirSync(podDir, { recursive: true, mode: 0o750 });
    fs.writeFileSync(tmp, content, { mode: 0o644 });
    fs.renameSync(tmp, file);
  } else {
    await fsp.mkdir(podDir, { recursive: true, mode: 0o750 });
    await writeFile(tmp, content, { mode: 0o644 });
    await fsp.rename(tmp, file);
  }
  return { containerPath: '/etc/hosts', hostPath: file, readonly: false, selinuxRelabel: false, propagation: 0 };
}
