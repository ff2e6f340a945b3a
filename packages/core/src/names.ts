// Name and label syntax checks. Each returns a list of problems (empty when valid) worded as the API
// server words them, so they slot straight into `Invalid value: "x": <problem>` messages.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export function dns1123Label(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 63) errs.push('must be no more than 63 characters');
  if (!DNS1123_LABEL.test(v)) {
    errs.push(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    );
  }
  return errs;
}

export function dns1123Subdomain(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 253) errs.push('must be no more than 253 characters');
  if (!DNS1123_SUBDOMAIN.test(v)) {
    errs.push(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    );
  }
  return errs;
}

// Label keys and values repeat across objects: remember the ones already found valid.
const validKeys = new Set<string>();
const validValues = new Set<string>();
const VALID_CACHE_MAX = 8192;
const NONE: string[] = [];

function remember(set: Set<string>, v: string): void {
  if (set.size >= VALID_CACHE_MAX) set.clear();
  set.add(v);
}

/** A label or annotation key: `[prefix/]name`, prefix a DNS subdomain. */
export function qualifiedName(v: string): string[] {
  if (validKeys.has(v)) return NONE;
  const errs = qualifiedNameUncached(v);
  if (errs.length === 0) remember(validKeys, v);
  return errs;
}

function qualifiedNameUncached(v: string): string[] {
  const errs: string[] = [];
  const parts = v.split('/');
  let name = v;
  if (parts.length === 2) {
    const [prefix] = parts;
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...dns1123Subdomain(prefix).map((e) => `prefix part ${e}`));
  } else if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (name.length > 0 && !QUALIFIED_NAME_PART.test(name)) {
    errs.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
  }
  return errs;
}

export function labelValue(v: string): string[] {
  if (validValues.has(v)) return NONE;
  const errs: string[] = [];
  if (v.length > 63) errs.push('must be no more than 63 characters');
  if (!LABEL_VALUE.test(v)) {
    errs.push(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
  }
  if (errs.length === 0) remember(validValues, v);
  return errs;
}

const PORT_NAME = /^[-a-z0-9]+$/;

/** A named port (IANA_SVC_NAME): at most 15 characters, lower-case alphanumerics and single inner '-', one letter. */
export function portName(v: string): string[] {
  const errs: string[] = [];
  if (v.length > 15) errs.push('must be no more than 15 characters');
  if (!PORT_NAME.test(v)) errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  if (v.includes('--')) errs.push("must not contain consecutive hyphens");
  if (!/[a-z]/.test(v)) errs.push('must contain at least one letter (a-z)');
  if (v.startsWith('-') || v.endsWith('-')) errs.push('must not begin or end with a hyphen');
  return errs;
}

/** Object names that are never valid path segments, whatever the kind's naming rule. */
export function pathSegmentName(v: string): string[] {
  if (v === '.' || v === '..') return [`may not be '${v}'`];
  const errs: string[] = [];
  if (v.includes('/')) errs.push("may not contain '/'");
  if (v.includes('%')) errs.push("may not contain '%'");
  if (v.includes('\0')) errs.push('may not contain NUL');
  return errs;
}
