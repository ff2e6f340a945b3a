// hosts.toml resolution, as containerd reads its registry hosts directory.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseWwwAuthenticate } from './registry-auth.js';
import { isLoopbackHost, registryHosts } from './registry-hosts.js';
import { tempDir } from './test-util.js';

describe('registryHosts', () => {
  it('defaults: HTTPS, docker.io to registry-1, loopback over plain HTTP', () => {
    expect(registryHosts('quay.io').map((h) => h.api.href)).toEqual(['https://quay.io/v2']);
    expect(registryHosts('docker.io').map((h) => h.api.href)).toEqual(['https://registry-1.docker.io/v2']);
    expect(registryHosts('localhost:5000')[0].api.href).toBe('http://localhost:5000/v2');
    expect(registryHosts('127.0.0.1:5000')[0].api.href).toBe('http://127.0.0.1:5000/v2');
    expect(isLoopbackHost('[::1]:5000')).toBe(true);
    expect(isLoopbackHost('127.0.0.1.example.com')).toBe(false);
  });

  it('reads mirrors in order before the server, with capabilities, CA, headers and override_path', () => {
    const dir = tempDir('kemu-cri-hosts-');
    fs.mkdirSync(path.join(dir, 'example.com'));
    fs.writeFileSync(path.join(dir, 'example.com', 'ca.pem'), 'PEM');
    fs.writeFileSync(
      path.join(dir, 'example.com', 'hosts.toml'),
      [
        'server = "https://example.com"',
        '[host."https://m1.example.net"]',
        '  capabilities = ["pull"]',
        '  ca = "ca.pem"',
        '  [host."https://m1.example.net".header]',
        '    x-token = "t"',
        '[host."http://m2.example.net/custom/v2"]',
        '  override_path = true',
      ].join('\n'),
    );
    const hosts = registryHosts('example.com', dir);
    expect(hosts.map((h) => [h.api.href, h.upstream])).toEqual([
      ['https://m1.example.net/v2', false],
      ['http://m2.example.net/custom/v2', false],
      ['https://example.com/v2', true],
    ]);
    expect([...hosts[0].capabilities]).toEqual(['pull']);
    expect(hosts[0].ca?.[0].toString()).toBe('PEM');
    expect(hosts[0].headers).toEqual({ 'x-token': 't' });
  });

  it('falls back to _default, and names the file and the problem in a bad one', () => {
    const dir = tempDir('kemu-cri-hosts-');
    fs.mkdirSync(path.join(dir, '_default'));
    fs.writeFileSync(path.join(dir, '_default', 'hosts.toml'), '[host."http://mirror.local:5000"]\n');
    expect(registryHosts('quay.io', dir).map((h) => h.api.href)).toEqual(['http://mirror.local:5000/v2', 'https://quay.io/v2']);
    fs.mkdirSync(path.join(dir, 'bad.io'));
    fs.writeFileSync(path.join(dir, 'bad.io', 'hosts.toml'), '[host."https://x"]\ncapabilities = ["fly"]\n');
    expect(() => registryHosts('bad.io', dir)).toThrow(/bad\.io\/hosts\.toml: unknown capability "fly"/);
    fs.writeFileSync(path.join(dir, 'bad.io', 'hosts.toml'), 'server = \n');
    expect(() => registryHosts('bad.io', dir)).toThrow(/bad\.io\/hosts\.toml: /);
  });
});

describe('parseWwwAuthenticate', () => {
  it('reads a bearer challenge with quoted parameters, and several challenges', () => {
    expect(parseWwwAuthenticate('Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull"')).toEqual([
      { scheme: 'bearer', params: { realm: 'https://auth.example/token', service: 'registry.example', scope: 'repository:a/b:pull' } },
    ]);
    expect(parseWwwAuthenticate('Basic realm="r"').map((c) => c.scheme)).toEqual(['basic']);
  });
});
