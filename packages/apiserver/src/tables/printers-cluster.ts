// Printers of the storage.k8s.io, scheduling.k8s.io and coordination.k8s.io kinds.
import type { CSIDriver, CSINode, Lease, PriorityClass, StorageClass, VolumeAttachment } from '@kemu/core';
import { age } from './human-duration.js';
import { column, NAME_COLUMN, registerPrinter } from './table.js';

const AGE = column('Age', 'string', 'Time since the object was created.');

/** Register the printers of these kinds. */
export function registerClusterPrinters(): void {
  registerPrinter('storage.k8s.io/v1', 'StorageClass', {
    columns: [
      NAME_COLUMN,
      column('Provisioner', 'string', 'The volume provisioner.'),
      column('ReclaimPolicy', 'string', 'Reclaim policy of provisioned volumes.'),
      column('VolumeBindingMode', 'string', 'When claims are bound and provisioned.'),
      column('AllowVolumeExpansion', 'string', 'Whether claims may grow.'),
      AGE,
    ],
    row(o, now) {
      const s = o as StorageClass;
      const isDefault = ['storageclass.kubernetes.io/is-default-class', 'storageclass.beta.kubernetes.io/is-default-class'].some(
        (a) => s.metadata.annotations?.[a] === 'true',
      );
      return [
        `${s.metadata.name ?? ''}${isDefault ? ' (default)' : ''}`,
        s.provisioner ?? '',
        s.reclaimPolicy ?? 'Delete',
        s.volumeBindingMode ?? 'Immediate',
        String(s.allowVolumeExpansion ?? false),
        age(s.metadata.creationTimestamp, now),
      ];
    },
  });

  registerPrinter('storage.k8s.io/v1', 'VolumeAttachment', {
    columns: [
      NAME_COLUMN,
      column('Attacher', 'string', 'The driver that attaches the volume.'),
      column('PV', 'string', 'The persistent volume attached.'),
      column('Node', 'string', 'The node attached to.'),
      column('Attached', 'boolean', 'Whether the volume is attached.'),
      AGE,
    ],
    row(o, now) {
      const v = o as VolumeAttachment;
      return [
        v.metadata.name ?? '',
        v.spec?.attacher ?? '',
        v.spec?.source?.persistentVolumeName ?? '',
        v.spec?.nodeName ?? '',
        v.status?.attached ?? false,
        age(v.metadata.creationTimestamp, now),
      ];
    },
  });

  registerPrinter('storage.k8s.io/v1', 'CSIDriver', {
    columns: [
      NAME_COLUMN,
      column('AttachRequired', 'boolean', 'Whether volumes need attaching.'),
      column('PodInfoOnMount', 'boolean', 'Whether pod details are passed at mount.'),
      column('StorageCapacity', 'boolean', 'Whether capacity is tracked.'),
      column('TokenRequests', 'string', 'Audiences of the tokens passed at mount.'),
      column('RequiresRepublish', 'boolean', 'Whether volumes are published again periodically.'),
      column('Modes', 'string', 'Volume lifecycle modes.'),
      AGE,
    ],
    row(o, now) {
      const d = o as CSIDriver;
      const tokens = d.spec?.tokenRequests?.map((t) => t.audience).join(',');
      return [
        d.metadata.name ?? '',
        d.spec?.attachRequired ?? true,
        d.spec?.podInfoOnMount ?? false,
        d.spec?.storageCapacity ?? false,
        tokens || '<unset>',
        d.spec?.requiresRepublish ?? false,
        (d.spec?.volumeLifecycleModes ?? ['Persistent']).join(','),
        age(d.metadata.creationTimestamp, now),
      ];
    },
  });

  registerPrinter('storage.k8s.io/v1', 'CSINode', {
    columns: [NAME_COLUMN, column('Drivers', 'integer', 'Number of drivers on the node.'), AGE],
    row: (o, now) => [o.metadata.name ?? '', (o as CSINode).spec?.drivers?.length ?? 0, age(o.metadata.creationTimestamp, now)],
  });

  registerPrinter('scheduling.k8s.io/v1', 'PriorityClass', {
    columns: [
      NAME_COLUMN,
      column('Value', 'integer', 'Priority of pods in the class.'),
      column('Global-Default', 'boolean', 'Whether the class applies to pods that name none.'),
      AGE,
      column('PreemptionPolicy', 'string', 'Whether pods of the class preempt others.'),
    ],
    row(o, now) {
      const p = o as PriorityClass;
      return [p.metadata.name ?? '', p.value, p.globalDefault ?? false, age(p.metadata.creationTimestamp, now), p.preemptionPolicy ?? 'PreemptLowerPriority'];
    },
  });

  registerPrinter('coordination.k8s.io/v1', 'Lease', {
    columns: [NAME_COLUMN, column('Holder', 'string', 'The current holder of the lease.'), AGE],
    row: (o, now) => [o.metadata.name ?? '', (o as Lease).spec?.holderIdentity ?? '', age(o.metadata.creationTimestamp, now)],
  });
}
