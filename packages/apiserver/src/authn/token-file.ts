// Static bearer tokens from a file, as kube-apiserver's --token-auth-file: CSV lines
// `token,user,uid[,"group1,group2"]`. A token in the file authenticates as that user; any other bearer token
// is left to the next token authenticator.
import fs from 'node:fs';
import { AUTHENTICATED_GROUP, type UserInfo } from '../auth-seams.js';

/** Splits one CSV line, honouring double quotes (a doubled quote inside quotes is a literal quote). */
function csvFields(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  if (quoted) throw new Error('unterminated quoted field');
  out.push(cur);
  return out;
}

export class TokenFileError extends Error {}

/** Parses a token file's text; errors name the line, as upstream refuses to start on a bad file. */
export function parseTokenFile(text: string, file = 'token file'): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    let f: string[];
    try {
      f = csvFields(line);
    } catch (err) {
      throw new TokenFileError(`${file}, line ${i + 1}: ${(err as Error).message}`);
    }
    if (f.length < 3) throw new TokenFileError(`${file}, line ${i + 1}: token file must have at least 3 columns (token, user name, uid)`);
    const [token, name, uid] = f;
    if (!token) throw new TokenFileError(`${file}, line ${i + 1}: empty token`);
    if (tokens.has(token)) throw new TokenFileError(`${file}, line ${i + 1}: duplicate token`);
    const groups = f[3] ? f[3].split(',').map((g) => g.trim()).filter(Boolean) : [];
    tokens.set(token, { name, uid, groups: [...groups, AUTHENTICATED_GROUP] });
  });
  return tokens;
}

export class StaticTokenAuthenticator {
  constructor(private readonly tokens: Map<string, UserInfo>) {}

  static fromFile(file: string): StaticTokenAuthenticator {
    return new StaticTokenAuthenticator(parseTokenFile(fs.readFileSync(file, 'utf8'), file));
  }

  /** The user a token names, or undefined when the file does not hold it. */
  authenticateToken(token: string): { user: UserInfo } | undefined {
    const u = this.tokens.get(token);
    return u && { user: { ...u, groups: [...u.groups] } };
  }
}
