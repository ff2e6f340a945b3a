import { type PluginContext, NETCONF_FIELDS, canonicalConf, mergeFields } from '@kemu/cni';
import { describe, expect, it } from 'vitest';
import { BRIDGE_FIELDS, bridge, loadBridgeConfig } from './bridge.js';

// The reference bridge's decoder matches keys case-insensitively; kemu-bridge reads its config the same way.
describe('kemu-bridge reads keys the way the reference decoder does', () => {
  it('declares its fields, and reads them in any case', () => {
    expect(bridge.confFields).toBe(BRIDGE_FIELDS);
    const conf = canonicalConf(
      { cniVersion: '1.0.0', name: 'n', type: 'kemu-bridge', Bridge: 'br9', IsGateway: true, IPMASQ: true, MTU: 1400, IPAM: { TYPE: 'kemu-host-local' } },
      mergeFields(NETCONF_FIELDS, BRIDGE_FIELDS),
    ) as PluginContext['conf'];
    expect(loadBridgeConfig({ conf } as PluginContext)).toMatchObject({
      bridge: 'br9',
      isGateway: true,
      ipMasq: true,
      mtu: 1400,
      ipamType: 'kemu-host-local',
    });
  });
});
