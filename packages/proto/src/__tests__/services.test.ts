// The RPC tables below are written from the upstream API definitions (CRI runtime.v1 as of Kubernetes
// 1.34+, CSI spec v1.12, kubelet plugin registration v1). Each service's generated definition must carry
// exactly these RPCs, with these message types and streaming kinds.
import { describe, expect, it } from 'vitest';
import { cri, csi, pluginregistration } from '../index';

type Row = [rpc: string, request: string, response: string, kind: 'unary' | 'server-stream'];

const unary = (rpc: string, req = `${rpc}Request`, res = `${rpc}Response`): Row => [rpc, req, res, 'unary'];
const stream = (rpc: string, req = `${rpc}Request`, res = `${rpc}Response`): Row => [rpc, req, res, 'server-stream'];

const runtimeService: Row[] = [
  unary('Version'),
  unary('RunPodSandbox'),
  unary('StopPodSandbox'),
  unary('RemovePodSandbox'),
  unary('PodSandboxStatus'),
  unary('ListPodSandbox'),
  stream('StreamPodSandboxes'),
  unary('CreateContainer'),
  unary('StartContainer'),
  unary('StopContainer'),
  unary('RemoveContainer'),
  unary('ListContainers'),
  stream('StreamContainers'),
  unary('ContainerStatus'),
  unary('UpdateContainerResources'),
  unary('ReopenContainerLog'),
  unary('ExecSync'),
  unary('Exec'),
  unary('Attach'),
  unary('PortForward'),
  unary('ContainerStats'),
  unary('ListContainerStats'),
  stream('StreamContainerStats'),
  unary('PodSandboxStats'),
  unary('ListPodSandboxStats'),
  stream('StreamPodSandboxStats'),
  unary('UpdateRuntimeConfig'),
  unary('Status'),
  unary('CheckpointContainer'),
  stream('GetContainerEvents', 'GetEventsRequest', 'ContainerEventResponse'),
  unary('ListMetricDescriptors'),
  unary('ListPodSandboxMetrics'),
  stream('StreamPodSandboxMetrics'),
  unary('RuntimeConfig'),
  unary('UpdatePodSandboxResources'),
];

const imageService: Row[] = [
  unary('ListImages'),
  stream('StreamImages'),
  unary('ImageStatus'),
  unary('PullImage'),
  unary('RemoveImage'),
  unary('ImageFsInfo'),
];

const identity: Row[] = [unary('GetPluginInfo'), unary('GetPluginCapabilities'), unary('Probe')];

const controller: Row[] = [
  unary('CreateVolume'),
  unary('DeleteVolume'),
  unary('ControllerPublishVolume'),
  unary('ControllerUnpublishVolume'),
  unary('ValidateVolumeCapabilities'),
  unary('ListVolumes'),
  unary('GetCapacity'),
  unary('ControllerGetCapabilities'),
  unary('CreateSnapshot'),
  unary('DeleteSnapshot'),
  unary('ListSnapshots'),
  unary('GetSnapshot'),
  unary('ControllerExpandVolume'),
  unary('ControllerGetVolume'),
  unary('ControllerModifyVolume'),
];

const groupController: Row[] = [
  unary('GroupControllerGetCapabilities'),
  unary('CreateVolumeGroupSnapshot'),
  unary('DeleteVolumeGroupSnapshot'),
  unary('GetVolumeGroupSnapshot'),
];

const node: Row[] = [
  unary('NodeStageVolume'),
  unary('NodeUnstageVolume'),
  unary('NodePublishVolume'),
  unary('NodeUnpublishVolume'),
  unary('NodeGetVolumeStats'),
  unary('NodeExpandVolume'),
  unary('NodeGetCapabilities'),
  unary('NodeGetInfo'),
];

const snapshotMetadata: Row[] = [stream('GetMetadataAllocated'), stream('GetMetadataDelta')];

const registration: Row[] = [
  unary('GetInfo', 'InfoRequest', 'PluginInfo'),
  unary('NotifyRegistrationStatus', 'RegistrationStatus', 'RegistrationStatusResponse'),
];

const cases: Array<[string, { root: import('protobufjs').Root }, string, Row[]]> = [
  ['runtime.v1.RuntimeService', cri, 'runtime.v1', runtimeService],
  ['runtime.v1.ImageService', cri, 'runtime.v1', imageService],
  ['csi.v1.Identity', csi, 'csi.v1', identity],
  ['csi.v1.Controller', csi, 'csi.v1', controller],
  ['csi.v1.GroupController', csi, 'csi.v1', groupController],
  ['csi.v1.Node', csi, 'csi.v1', node],
  ['csi.v1.SnapshotMetadata', csi, 'csi.v1', snapshotMetadata],
  ['pluginregistration.Registration', pluginregistration, 'pluginregistration', registration],
];

const definitions: Record<string, Record<string, { path: string; requestStream: boolean; responseStream: boolean }>> = {
  'runtime.v1.RuntimeService': cri.RuntimeServiceService,
  'runtime.v1.ImageService': cri.ImageServiceService,
  'csi.v1.Identity': csi.IdentityService,
  'csi.v1.Controller': csi.ControllerService,
  'csi.v1.GroupController': csi.GroupControllerService,
  'csi.v1.Node': csi.NodeService,
  'csi.v1.SnapshotMetadata': csi.SnapshotMetadataService,
  'pluginregistration.Registration': pluginregistration.RegistrationService,
};

describe.each(cases)('%s', (service, mod, pkg, table) => {
  it('has exactly the upstream RPCs in order, with their message types', () => {
    const reflected = mod.root.lookupService(service);
    const actual: Row[] = reflected.methodsArray.map((m) => [
      m.name,
      m.resolvedRequestType!.fullName.replace(`.${pkg}.`, ''),
      m.resolvedResponseType!.fullName.replace(`.${pkg}.`, ''),
      m.responseStream ? 'server-stream' : 'unary',
    ]);
    expect(actual).toEqual(table);
    expect(reflected.methodsArray.some((m) => m.requestStream)).toBe(false);
  });

  it('exposes a grpc-js definition with the wire paths and streaming flags', () => {
    const def = definitions[service];
    expect(Object.keys(def)).toEqual(table.map((r) => r[0]));
    for (const [rpc, , , kind] of table) {
      expect(def[rpc].path).toBe(`/${service}/${rpc}`);
      expect(def[rpc].responseStream).toBe(kind === 'server-stream');
      expect(def[rpc].requestStream).toBe(false);
    }
  });
});
