// The DefaultTolerationSeconds admission plugin: a new pod that does not tolerate the not-ready and
// unreachable NoExecute taints gets tolerations for 300 seconds, so it is evicted five minutes after its
// node goes away, as upstream.
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';

export const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
export const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';

export class DefaultTolerationSecondsAdmission implements AdmissionChain {
  constructor(private readonly seconds = 300) {}

  async admit(attrs: AdmissionAttributes): Promise<void> {
    if (attrs.operation !== 'CREATE' || attrs.resource.group !== '' || attrs.resource.resource !== 'pods' || attrs.subresource || !attrs.object) return;
    const spec = (attrs.object.spec ??= {});
    const tolerations: any[] = spec.tolerations ?? [];
    const tolerates = (key: string) =>
      tolerations.some((t) => (t.effect === 'NoExecute' || !t.effect) && (t.key === key || (!t.key && t.operator === 'Exists')));
    const add = [NOT_READY_TAINT, UNREACHABLE_TAINT]
      .filter((k) => !tolerates(k))
      .map((key) => ({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: this.seconds }));
    if (add.length) spec.tolerations = [...tolerations, ...add];
  }

  async validate(): Promise<void> {}
}
