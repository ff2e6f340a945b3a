// Schema of the calico-style IPAM kinds (crd.projectcalico.org/v1: IPPool, IPAMBlock, BlockAffinity).
// Upstream serves them as CRDs: JSON only, so no protobuf numbers.
import { f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'org.projectcalico.crd.v1',
  {
    IPPool: type('A range of pod addresses, carved into per-node blocks.', {
      metadata: f(0, 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'),
      spec: f(0, 'IPPoolSpec', '', { required: true }),
    }),
    IPPoolSpec: type('The pool\'s range and how its addresses are used.', {
      cidr: f(0, 'string', 'Address range of the pool.', { required: true }),
      blockSize: f(0, 'int32', 'Prefix length of the per-node blocks (default 26 for IPv4, 122 for IPv6).'),
      ipipMode: f(0, 'string', 'When to encapsulate in IP-in-IP.', { enum: ['Never', 'Always', 'CrossSubnet'] }),
      vxlanMode: f(0, 'string', 'When to encapsulate in VXLAN.', { enum: ['Never', 'Always', 'CrossSubnet'] }),
      natOutgoing: f(0, 'bool', 'Masquerade traffic leaving the pool.'),
      disabled: f(0, 'bool', 'Allocate no new addresses from the pool.'),
      nodeSelector: f(0, 'string', 'Which nodes may take blocks from the pool.'),
      allowedUses: f(0, '[]string', 'Workload and/or Tunnel.'),
    }),
    IPAMBlock: type('One block of a pool and which of its addresses are allocated.', {
      metadata: f(0, 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'),
      spec: f(0, 'IPAMBlockSpec', '', { required: true }),
    }),
    IPAMBlockSpec: type('Allocation state of a block.', {
      cidr: f(0, 'string', 'Address range of the block.', { required: true }),
      affinity: f(0, 'string', '`host:<node>` when the block is affine to a node.'),
      allocations: f(0, '[]int32', 'Per address: index into attributes, or null when free.', { required: true }),
      unallocated: f(0, '[]int32', 'Ordinals of free addresses.', { required: true }),
      attributes: f(0, '[]json', 'Handle and attributes of each allocation.', { required: true }),
      deleted: f(0, 'bool', 'The block is being released.'),
      strictAffinity: f(0, 'bool', 'Only the affine node may allocate from the block.'),
      sequenceNumber: f(0, 'int64', 'Version counter of the allocation state.'),
    }),
    BlockAffinity: type('Records that a node claims a block.', {
      metadata: f(0, 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'),
      spec: f(0, 'BlockAffinitySpec', '', { required: true }),
    }),
    BlockAffinitySpec: type('Which node claims which block, and the claim\'s state.', {
      state: f(0, 'string', 'pending, confirmed or pendingDeletion.', { required: true }),
      node: f(0, 'string', 'The claiming node.', { required: true }),
      cidr: f(0, 'string', 'The claimed block.', { required: true }),
      deleted: f(0, 'string', 'Set when the claim is being released.'),
    }),
  },
  [
    { kind: 'IPPool', apiVersion: 'crd.projectcalico.org/v1', type: 'IPPool', protobuf: false },
    { kind: 'IPAMBlock', apiVersion: 'crd.projectcalico.org/v1', type: 'IPAMBlock', protobuf: false },
    { kind: 'BlockAffinity', apiVersion: 'crd.projectcalico.org/v1', type: 'BlockAffinity', protobuf: false },
  ],
);
