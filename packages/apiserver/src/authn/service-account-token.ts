// ServiceAccount tokens: JWTs signed by the cluster's service-account key, bound to the ServiceAccount (and
// optionally a Pod, Secret or Node) by name and uid, with an audience and an expiry, as kube-apiserver
// issues them through the TokenRequest API and checks them on every request. A token whose bound objects
// are gone, whose audience is not the server's, or that has expired is refused with 401.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type KubeObject, isNotFound, type Store } from '@kemu/core';
import { type CryptoKey, errors as joseErrors, exportPKCS8, exportSPKI, generateKeyPair, importPKCS8, importSPKI, jwtVerify, SignJWT } from 'jose';
import { AUTHENTICATED_GROUP, type UserInfo } from '../auth-seams.js';
import { serviceAccountGroups, serviceAccountUsername } from '../authz/rbac-rules.js';
import { UnauthorizedError } from './unauthorized.js';

export const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const ALG = 'ES256';

/** The `kubernetes.io` private claim of a bound token. */
export interface KubernetesClaims {
  namespace: string;
  serviceaccount: { name: string; uid: string };
  pod?: { name: string; uid: string };
  secret?: { name: string; uid: string };
  node?: { name: string; uid: string };
  warnafter?: number;
}

/** The signing key pair, PEM-encoded on disk (sa.key PKCS#8, sa.pub SPKI), as kube-apiserver's flags take them. */
export class ServiceAccountKeys {
  private constructor(
    readonly privateKey: CryptoKey,
    readonly publicKey: CryptoKey,
    /** Key id: base64url SHA-256 of the public key's DER, as upstream derives it. */
    readonly kid: string,
  ) {}

  static async create(): Promise<ServiceAccountKeys> {
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
    return ServiceAccountKeys.from(privateKey, publicKey);
  }

  private static async from(privateKey: CryptoKey, publicKey: CryptoKey): Promise<ServiceAccountKeys> {
    const spki = await exportSPKI(publicKey);
    const der = Buffer.from(spki.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    return new ServiceAccountKeys(privateKey, publicKey, createHash('sha256').update(der).digest('base64url'));
  }

  /** The keys kept in `dir` (sa.key 0600, sa.pub), made there on first use; symlinks are refused. */
  static async loadOrCreate(dir: string): Promise<ServiceAccountKeys> {
    const keyFile = path.join(dir, 'sa.key');
    const pubFile = path.join(dir, 'sa.pub');
    const st = fs.lstatSync(keyFile, { throwIfNoEntry: false });
    if (st) {
      const pst = fs.lstatSync(pubFile, { throwIfNoEntry: false });
      if (!st.isFile() || !pst?.isFile()) throw new Error(`${keyFile} or ${pubFile} is missing or not a regular file`);
      const priv = await importPKCS8(fs.readFileSync(keyFile, 'utf8'), ALG, { extractable: true });
      const pub = await importSPKI(fs.readFileSync(pubFile, 'utf8'), ALG, { extractable: true });
      return ServiceAccountKeys.from(priv, pub);
    }
    const keys = await ServiceAccountKeys.create();
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;
    for (const [file, text, mode] of [
      [keyFile, await exportPKCS8(keys.privateKey), 0o600],
      [pubFile, await exportSPKI(keys.publicKey), 0o644],
    ] as const) {
      const fd = fs.openSync(file, flags, mode);
      try {
        fs.writeSync(fd, text);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    }
    return keys;
  }
}

export interface ServiceAccountTokenOptions {
  keys: ServiceAccountKeys;
  /** Where ServiceAccounts and bound objects are looked up. */
  store: Store;
  issuer?: string;
  /** The audiences the API server accepts (and gives tokens that name none); defaults to [issuer]. */
  apiAudiences?: string[];
  now?: () => Date;
}

export interface IssueRequest {
  namespace: string;
  serviceAccount: KubeObject;
  audiences: string[];
  expirationSeconds: number;
  bound?: { kind: 'Pod' | 'Secret' | 'Node'; object: KubeObject };
}

/** Issues and checks ServiceAccount tokens. */
export class ServiceAccountTokens {
  readonly issuer: string;
  readonly apiAudiences: string[];
  private readonly now: () => Date;

  constructor(private readonly opts: ServiceAccountTokenOptions) {
    this.issuer = opts.issuer ?? DEFAULT_ISSUER;
    this.apiAudiences = opts.apiAudiences?.length ? opts.apiAudiences : [this.issuer];
    this.now = opts.now ?? (() => new Date());
  }

  /** A signed token and its expiry. */
  async issue(req: IssueRequest): Promise<{ token: string; expirationTimestamp: Date }> {
    const iat = Math.floor(this.now().getTime() / 1000);
    const exp = iat + req.expirationSeconds;
    const ref = (o: KubeObject) => ({ name: o.metadata.name!, uid: o.metadata.uid! });
    const claims: KubernetesClaims = {
      namespace: req.namespace,
      serviceaccount: ref(req.serviceAccount),
    };
    if (req.bound) {
      const key = req.bound.kind === 'Pod' ? 'pod' : req.bound.kind === 'Secret' ? 'secret' : 'node';
      claims[key] = ref(req.bound.object);
      if (req.bound.kind === 'Pod' && req.bound.object.spec?.nodeName) claims.node = { name: req.bound.object.spec.nodeName, uid: '' };
    }
    const token = await new SignJWT({ 'kubernetes.io': claims })
      .setProtectedHeader({ alg: ALG, kid: this.opts.keys.kid })
      .setIssuer(this.issuer)
      .setSubject(serviceAccountUsername(req.namespace, req.serviceAccount.metadata.name!))
      .setAudience(req.audiences)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(this.opts.keys.privateKey);
    return { token, expirationTimestamp: new Date(exp * 1000) };
  }

  /**
   * The ServiceAccount user a token names, checked against `audiences` (default: the API audiences).
   * Undefined when the token is not one of ours (another issuer, not a JWT), so another authenticator may
   * claim it; UnauthorizedError when it is ours but invalid.
   */
  async authenticateToken(token: string, audiences: string[] = this.apiAudiences): Promise<{ user: UserInfo; audiences: string[] } | undefined> {
    if (token.split('.').length !== 3) return undefined;
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.opts.keys.publicKey, {
        issuer: this.issuer,
        algorithms: [ALG],
        currentDate: this.now(),
        clockTolerance: 0,
      }));
    } catch (err) {
      if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'iss') return undefined;
      if (err instanceof joseErrors.JWSSignatureVerificationFailed || err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) {
        return undefined;
      }
      if (err instanceof joseErrors.JWTExpired) throw new UnauthorizedError('service account token has expired');
      throw new UnauthorizedError(`invalid service account token: ${(err as Error).message}`);
    }
    const aud = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
    const matched = aud.filter((a) => audiences.includes(a));
    if (!matched.length) throw new UnauthorizedError('token audiences is invalid for the current issuer');
    const k = payload['kubernetes.io'] as KubernetesClaims | undefined;
    if (!k?.namespace || !k.serviceaccount?.name) throw new UnauthorizedError('service account token claims are missing');
    const sa = await this.lookup('ServiceAccount', k.namespace, k.serviceaccount.name);
    if (sa.metadata.uid !== k.serviceaccount.uid) {
      throw new UnauthorizedError(`service account UID (${sa.metadata.uid}) does not match claim (${k.serviceaccount.uid})`);
    }
    const extra: Record<string, string[]> = {};
    if (k.pod) {
      const pod = await this.lookup('Pod', k.namespace, k.pod.name);
      if (pod.metadata.uid !== k.pod.uid) throw new UnauthorizedError(`pod UID (${pod.metadata.uid}) does not match claim (${k.pod.uid})`);
      if (pod.metadata.deletionTimestamp) throw new UnauthorizedError('token is bound to a pod that is being deleted');
      extra['authentication.kubernetes.io/pod-name'] = [k.pod.name];
      extra['authentication.kubernetes.io/pod-uid'] = [k.pod.uid];
    }
    if (k.secret) {
      const secret = await this.lookup('Secret', k.namespace, k.secret.name);
      if (secret.metadata.uid !== k.secret.uid) throw new UnauthorizedError(`secret UID (${secret.metadata.uid}) does not match claim (${k.secret.uid})`);
    }
    if (k.node?.uid) {
      const node = await this.lookup('Node', '', k.node.name);
      if (node.metadata.uid !== k.node.uid) throw new UnauthorizedError(`node UID (${node.metadata.uid}) does not match claim (${k.node.uid})`);
    }
    if (k.node?.name) extra['authentication.kubernetes.io/node-name'] = [k.node.name];
    if (payload.jti) extra['authentication.kubernetes.io/credential-id'] = [`JTI=${payload.jti}`];
    return {
      user: {
        name: serviceAccountUsername(k.namespace, k.serviceaccount.name),
        uid: k.serviceaccount.uid,
        groups: [...serviceAccountGroups(k.namespace), AUTHENTICATED_GROUP],
        ...(Object.keys(extra).length ? { extra } : {}),
      },
      audiences: matched,
    };
  }

  private async lookup(kind: string, namespace: string, name: string): Promise<KubeObject> {
    try {
      return await this.opts.store.get(kind, namespace, name);
    } catch (err) {
      if (isNotFound(err)) throw new UnauthorizedError(`${kind} ${namespace}/${name} referenced by the token no longer exists`);
      throw err;
    }
  }
}
