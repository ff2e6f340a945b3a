// Printers of identity, policy and quota kinds: ServiceAccount, Secret, ResourceQuota (v1),
// PodDisruptionBudget (policy/v1), HorizontalPodAutoscaler (autoscaling/v2), RoleBinding and
// ClusterRoleBinding (rbac.authorization.k8s.io/v1), and the admission webhook and policy kinds
// (admissionregistration.k8s.io/v1). Roles and ClusterRoles have no printer upstream: Name and Created At.
import { age } from './human-duration.js';
import { column, NAME_COLUMN, registerPrinter } from './table.js';

const AGE = column('Age', 'string', 'Time since the object was created.');

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

/** Register the printers of these kinds. */
export function registerPolicyPrinters(): void {
  registerPrinter('v1', 'ServiceAccount', {
    columns: [NAME_COLUMN, column('Secrets', 'string', 'Number of secrets listed by the account.'), AGE],
    row: (o, now) => [o.metadata.name ?? '', (o.secrets ?? []).length, age(o.metadata.creationTimestamp, now)],
  });

  registerPrinter('v1', 'Secret', {
    columns: [NAME_COLUMN, column('Type', 'string', 'Type of the secret.'), column('Data', 'string', 'Number of keys.'), AGE],
    row: (o, now) => [o.metadata.name ?? '', o.type ?? 'Opaque', Object.keys(o.data ?? {}).length, age(o.metadata.creationTimestamp, now)],
  });

  registerPrinter('v1', 'ResourceQuota', {
    columns: [
      NAME_COLUMN,
      column('Request', 'string', 'Used and hard amounts of requested resources.'),
      column('Limit', 'string', 'Used and hard amounts of resource limits.'),
      AGE,
    ],
    row(o, now) {
      const hard: Record<string, string> = o.status?.hard ?? {};
      const used: Record<string, string> = o.status?.used ?? {};
      const requests: string[] = [];
      const limits: string[] = [];
      for (const name of Object.keys(hard).sort()) {
        const cell = `${name}: ${used[name] ?? '0'}/${hard[name]}`;
        (name.startsWith('limits.') ? limits : requests).push(cell);
      }
      return [o.metadata.name ?? '', requests.join(', '), limits.join(', '), age(o.metadata.creationTimestamp, now)];
    },
  });

  registerPrinter('policy/v1', 'PodDisruptionBudget', {
    columns: [
      NAME_COLUMN,
      column('Min Available', 'string', 'Pods that must stay available.'),
      column('Max Unavailable', 'string', 'Pods that may be unavailable.'),
      column('Allowed Disruptions', 'integer', 'Pods that may be disrupted now.'),
      AGE,
    ],
    row(o, now) {
      const show = (v: unknown) => (v === undefined || v === null ? 'N/A' : String(v));
      return [o.metadata.name ?? '', show(o.spec?.minAvailable), show(o.spec?.maxUnavailable), o.status?.disruptionsAllowed ?? 0, age(o.metadata.creationTimestamp, now)];
    },
  });

  registerPrinter('autoscaling/v2', 'HorizontalPodAutoscaler', {
    columns: [
      NAME_COLUMN,
      column('Reference', 'string', 'The scaled object.'),
      column('Targets', 'string', 'Current and target metric values.'),
      column('MinPods', 'string', 'Fewest replicas.'),
      column('MaxPods', 'string', 'Most replicas.'),
      column('Replicas', 'string', 'Current replicas.'),
      AGE,
    ],
    row(o, now) {
      const spec = o.spec ?? {};
      const ref = spec.scaleTargetRef ?? {};
      const current = (o.status?.currentMetrics ?? []) as { type: string; resource?: { name: string; current?: { averageUtilization?: number; averageValue?: string } } }[];
      const targets = ((spec.metrics ?? []) as { type: string; resource?: { name: string; target?: { type?: string; averageUtilization?: number; averageValue?: string } } }[]).map((m, i) => {
        if (m.type !== 'Resource' || !m.resource) return '<unknown>/<unknown>';
        const cur = current[i]?.resource?.current;
        const t = m.resource.target ?? {};
        if (t.type === 'Utilization' || t.averageUtilization !== undefined)
          return `${m.resource.name}: ${cur?.averageUtilization !== undefined ? `${cur.averageUtilization}%` : '<unknown>'}/${t.averageUtilization}%`;
        return `${m.resource.name}: ${cur?.averageValue ?? '<unknown>'}/${t.averageValue}`;
      });
      return [
        o.metadata.name ?? '',
        `${ref.kind ?? ''}/${ref.name ?? ''}`,
        targets.length ? targets.join(', ') : '<none>',
        spec.minReplicas === undefined ? '<unset>' : spec.minReplicas,
        spec.maxReplicas ?? 0,
        o.status?.currentReplicas ?? 0,
        age(o.metadata.creationTimestamp, now),
      ];
    },
  });

  for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']) {
    registerPrinter('admissionregistration.k8s.io/v1', kind, {
      columns: [NAME_COLUMN, column('Webhooks', 'integer', 'Number of webhooks in the configuration.'), AGE],
      row: (o, now) => [o.metadata.name ?? '', (o.webhooks ?? []).length, age(o.metadata.creationTimestamp, now)],
    });
  }

  registerPrinter('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicy', {
    columns: [
      NAME_COLUMN,
      column('Validations', 'integer', 'Number of validation rules.'),
      column('ParamKind', 'string', 'Kind of the objects that parameterize the policy.'),
      AGE,
    ],
    row(o, now) {
      const pk = o.spec?.paramKind;
      return [o.metadata.name ?? '', (o.spec?.validations ?? []).length, pk ? `${pk.apiVersion}/${pk.kind}` : '<unset>', age(o.metadata.creationTimestamp, now)];
    },
  });

  registerPrinter('admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicyBinding', {
    columns: [
      NAME_COLUMN,
      column('PolicyName', 'string', 'The policy the binding applies.'),
      column('ParamRef', 'string', 'The object holding the parameters.'),
      AGE,
    ],
    row(o, now) {
      const ref = o.spec?.paramRef;
      const param = ref ? (ref.namespace ? `${ref.namespace}/${ref.name ?? '*'}` : (ref.name ?? '*')) : '<unset>';
      return [o.metadata.name ?? '', o.spec?.policyName ?? '', param, age(o.metadata.creationTimestamp, now)];
    },
  });

  for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
    registerPrinter('rbac.authorization.k8s.io/v1', kind, {
      columns: [
        NAME_COLUMN,
        column('Role', 'string', 'The role granted.'),
        AGE,
        column('Users', 'string', 'Users bound.', 1),
        column('Groups', 'string', 'Groups bound.', 1),
        column('ServiceAccounts', 'string', 'Service accounts bound.', 1),
      ],
      row(o, now) {
        const subjects = (o.subjects ?? []) as Subject[];
        const of = (k: string) => subjects.filter((s) => s.kind === k);
        return [
          o.metadata.name ?? '',
          `${o.roleRef?.kind ?? ''}/${o.roleRef?.name ?? ''}`,
          age(o.metadata.creationTimestamp, now),
          of('User').map((s) => s.name).join(', '),
          of('Group').map((s) => s.name).join(', '),
          of('ServiceAccount').map((s) => `${s.namespace ?? ''}:${s.name}`).join(', '),
        ];
      },
    });
  }
}
