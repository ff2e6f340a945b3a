import type { Secret } from '@kemu/core';
import { afterEach, describe, expect, it } from 'vitest';
import { isDefaultRegistry, pullCredentials } from './image-pull-secrets.js';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const dockerconfigjson = (name: string, auths: Record<string, unknown>): Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'default' },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) },
});

describe('pullCredentials (the docker keyring)', () => {
  const secrets = [
    dockerconfigjson('a', {
      'https://registry.example.com': { auth: b64('host:pw1') },
      'registry.example.com/team': { username: 'team', password: 'pw2' },
      '*.corp.example': { username: 'glob', password: 'pw3' },
      'localhost:5000': { username: 'local', password: 'pw4' },
      'https://index.docker.io/v1/': { username: 'hub', password: 'pw5' },
    }),
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'legacy', namespace: 'default' }, type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(JSON.stringify({ 'quay.io': { auth: b64('q:pw6') } })) } } as Secret,
  ];
  const users = (image: string) => pullCredentials(image, secrets).map((c) => `${c.username}@${c.serverAddress}`);

  it('matches host, path prefix, globs and ports, most specific first', () => {
    expect(users('registry.example.com/team/app:1')).toEqual(['team@registry.example.com/team', 'host@registry.example.com']);
    expect(users('registry.example.com/other/app:1')).toEqual(['host@registry.example.com']);
    expect(users('eu.corp.example/app')).toEqual(['glob@*.corp.example']);
    expect(users('a.b.corp.example/app')).toEqual([]);
    expect(users('localhost:5000/app')).toEqual(['local@localhost:5000']);
    expect(users('localhost:5001/app')).toEqual([]);
    expect(users('quay.io/org/app')).toEqual(['q@quay.io']);
    expect(pullCredentials('registry.example.com/team/app', secrets)[0]).toMatchObject({ username: 'team', password: 'pw2' });
    expect(pullCredentials('registry.example.com/x', secrets)[0]).toMatchObject({ username: 'host', password: 'pw1' });
  });

  it('gives Docker Hub credentials to images without a registry host', () => {
    expect(isDefaultRegistry('busybox:1.36')).toBe(true);
    expect(isDefaultRegistry('library/busybox')).toBe(true);
    expect(isDefaultRegistry('docker.io/library/busybox')).toBe(true);
    expect(isDefaultRegistry('localhost/app')).toBe(false);
    expect(users('busybox:1.36')).toEqual(['hub@index.docker.io']);
    expect(users('ghcr.io/org/app')).toEqual([]);
  });
});

describe('image pulls with imagePullSecrets', () => {
  const running: TestKubelet[] = [];
  afterEach(async () => {
    for (const k of running.splice(0)) await k.stop();
  });

  it('passes the matching credentials to PullImage and warns about a secret that does not exist', async () => {
    const k = await startTestKubelet();
    running.push(k);
    const auths: unknown[] = [];
    const pull = k.opts.images.PullImage.bind(k.opts.images);
    k.opts.images.PullImage = (req) => {
      auths.push(req.auth);
      return pull(req);
    };
    await k.store.create(dockerconfigjson('regcred', { 'registry.example.com': { username: 'robot', password: 's3cret' } }));
    await k.store.create(
      testPod('private', {
        imagePullSecrets: [{ name: 'regcred' }, { name: 'gone' }],
        containers: [{ name: 'app', image: 'registry.example.com/team/app:1', imagePullPolicy: 'Always' }],
      }),
    );
    await until('running', async () => (await k.store.get('Pod', 'default', 'private')).status?.phase === 'Running');
    expect(auths).toEqual([{ username: 'robot', password: 's3cret', serverAddress: 'registry.example.com', identityToken: '', registryToken: '' }]);
    const ev = (await k.store.list('Event', { namespace: 'default' })).items.find((e) => e.reason === 'FailedToRetrieveImagePullSecret');
    expect(ev?.message).toBe('Unable to retrieve some image pull secrets ("gone"); attempting to pull the image may not succeed.');
  });
});
