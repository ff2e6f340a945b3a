// The Kubernetes version this server implements the API of and reports at /version.
export const KUBERNETES_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.0-kemu' };

export function versionInfo() {
  return {
    ...KUBERNETES_VERSION,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'node',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  };
}
