// NetworkPolicy for dual-stack pods: each family's rules (iptables and ip6tables) on the simulated datapath,
// a pod matched by its address of that family, an ipBlock only by the family of its CIDR; the verdicts equal
// a pure evaluation of the policies for both families.
import type { World } from '@kemu/netsim';
import { describe, expect, it } from 'vitest';
import { allowed } from './policy-eval.js';
import { buildPolicyRules, podIPOf } from './policy-rules.js';
import { DUAL_STACK_PODS, dualStackWorld as world, IPV6_POLICY_SETS, NAMESPACES } from './test-helpers.js';

const byName = (n: string) => DUAL_STACK_PODS.find((p) => p.metadata.name === n)!;
const reach = (w: World, from: string, to: string, port: number, family: 4 | 6) =>
  w.tcpConnect(from, podIPOf(byName(to), family)!, port, { trace: false }).state === 'established';

describe('NetworkPolicy for dual-stack pods on the simulated datapath', () => {
  it('writes each family\'s rules with that family\'s addresses, and an ipBlock only into its own family', () => {
    const input = { policies: IPV6_POLICY_SETS[2]!, pods: DUAL_STACK_PODS, namespaces: NAMESPACES, nodeName: 'node' };
    const v4 = buildPolicyRules(input, 4).filter.join('\n');
    const v6 = buildPolicyRules(input, 6).filter.join('\n');
    expect(v4).toContain('-d 10.244.2.2/32 -m comment --comment "ingress of shop/db"');
    expect(v6).toContain('-d fd00:10:244:2::2/128 -m comment --comment "ingress of shop/db"');
    expect(v4).toContain('-s 10.244.1.0/24 -p tcp -m tcp --dport 8080');
    expect(v4).not.toContain('fd00');
    expect(v6).toContain('-s fd00:10:244:4::/64 -p tcp -m tcp --dport 8080');
    expect(v6).not.toMatch(/10\.244\./);
  });

  it('lets through exactly what the policies allow in each family', () => {
    const w = world(IPV6_POLICY_SETS[1]!);
    expect(reach(w, 'batch', 'web', 8080, 6)).toBe(true);
    expect(reach(w, 'batch', 'db', 8080, 6)).toBe(false);
    expect(reach(w, 'batch', 'web', 8080, 4)).toBe(false);
    const t = w.tcpConnect('batch', podIPOf(byName('db'), 6)!, 8080);
    expect(t.trace.filter((h) => h.kind === 'drop').at(-1)).toMatchObject({ ns: 'node', reason: 'dropped: NetworkPolicy shop/batch-v6: no egress rule allows this' });
    const blocks = world(IPV6_POLICY_SETS[2]!);
    expect([reach(blocks, 'web', 'db', 8080, 4), reach(blocks, 'web', 'db', 8080, 6)]).toEqual([true, false]);
    expect([reach(blocks, 'probe', 'db', 8080, 4), reach(blocks, 'probe', 'db', 8080, 6)]).toEqual([false, true]);
  });

  it('agrees with a pure evaluation of the policies for every pair, port, family and ICMP', () => {
    for (const policies of IPV6_POLICY_SETS) {
      const w = world(policies);
      for (const from of DUAL_STACK_PODS)
        for (const to of DUAL_STACK_PODS) {
          if (from === to) continue;
          for (const family of [4, 6] as const)
            for (const port of [5432, 8080, undefined]) {
              const sim = port === undefined ? w.ping(from.metadata.name!, podIPOf(to, family)!).reachable : reach(w, from.metadata.name!, to.metadata.name!, port, family);
              const want = allowed({ from, to, port, family }, policies, NAMESPACES);
              const cell = `${policies[0]!.metadata.name} ${from.metadata.name}->${to.metadata.name} v${family}:${port ?? 'icmp'}`;
              expect(`${cell} ${sim}`).toBe(`${cell} ${want}`);
            }
        }
    }
  });
});
