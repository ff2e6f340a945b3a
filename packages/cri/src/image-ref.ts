// Image reference normalisation as container runtimes do it (docker.io default domain, library/ for
// official images, :latest when neither tag nor digest is given).
import { invalidArgument } from './errors.js';

export interface ParsedRef {
  /** domain/path, e.g. docker.io/library/busybox */
  repository: string;
  tag?: string;
  digest?: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;

export function isImageId(s: string): boolean {
  return DIGEST.test(s) || /^[0-9a-f]{64}$/.test(s);
}

export function parseImageRef(input: string): ParsedRef {
  if (!input || input.includes('\0') || /\s/.test(input)) throw invalidArgument(`invalid image reference ${JSON.stringify(input)}`);
  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw invalidArgument(`invalid image reference ${JSON.stringify(input)}: bad digest`);
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw invalidArgument(`invalid image reference ${JSON.stringify(input)}: bad tag`);
  }
  const parts = rest.split('/');
  let domain = 'docker.io';
  if (parts.length > 1 && (parts[0].includes('.') || parts[0].includes(':') || parts[0] === 'localhost')) {
    domain = parts.shift()!;
  }
  if (domain === 'docker.io' && parts.length === 1) parts.unshift('library');
  for (const p of parts) {
    if (!COMPONENT.test(p)) throw invalidArgument(`invalid image reference ${JSON.stringify(input)}: repository name must be lowercase`);
  }
  if (!tag && !digest) tag = 'latest';
  return { repository: `${domain}/${parts.join('/')}`, tag, digest };
}

export function formatRef(ref: ParsedRef): string {
  return `${ref.repository}${ref.tag ? `:${ref.tag}` : ''}${ref.digest ? `@${ref.digest}` : ''}`;
}

export function normalizeRef(input: string): string {
  return formatRef(parseImageRef(input));
}

/** Shell-style glob (`*`, `?`) match used for --fail-image patterns. */
export function globMatch(pattern: string, s: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return re.test(s);
}
