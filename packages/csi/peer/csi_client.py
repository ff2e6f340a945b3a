#!/usr/bin/env python3
"""An independent CSI client: Google's protobuf runtime and gRPC's C core (python3-grpcio), with
messages compiled by protoc from proto/csi/v1/csi.proto. It drives one volume through its whole life on
a kemu-csi socket and prints what it observed as JSON, so a test can compare it with the spec.

usage: csi_client.py GENERATED_DIR CSI_SOCKET REGISTRATION_SOCKET KUBELET_DIR NODE_ID
"""
import json
import os
import sys

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
from csi.v1 import csi_pb2 as csi  # noqa: E402
from pluginregistration import api_pb2 as reg  # noqa: E402

_, _, sock, reg_sock, kubelet, node_id = sys.argv
channel = grpc.insecure_channel("unix://" + sock)


def rpc(service, method, request, response_type):
    return channel.unary_unary(
        "/csi.v1.%s/%s" % (service, method),
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_type.FromString,
    )(request, timeout=10)


def code_of(fn):
    try:
        fn()
        return "OK"
    except grpc.RpcError as e:
        return e.code().name


out = {}
cap = csi.VolumeCapability(
    mount=csi.VolumeCapability.MountVolume(),
    access_mode=csi.VolumeCapability.AccessMode(mode=csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER),
)

info = rpc("Identity", "GetPluginInfo", csi.GetPluginInfoRequest(), csi.GetPluginInfoResponse)
out["name"] = info.name
out["vendor_version"] = info.vendor_version
caps = rpc("Identity", "GetPluginCapabilities", csi.GetPluginCapabilitiesRequest(), csi.GetPluginCapabilitiesResponse)
out["plugin_services"] = sorted(csi.PluginCapability.Service.Type.Name(c.service.type) for c in caps.capabilities if c.HasField("service"))
out["probe_ready"] = rpc("Identity", "Probe", csi.ProbeRequest(), csi.ProbeResponse).ready.value
ni = rpc("Node", "NodeGetInfo", csi.NodeGetInfoRequest(), csi.NodeGetInfoResponse)
out["node_id"] = ni.node_id
out["topology"] = dict(ni.accessible_topology.segments)

create = csi.CreateVolumeRequest(
    name="peer-vol",
    capacity_range=csi.CapacityRange(required_bytes=3 * 1024 * 1024),
    volume_capabilities=[cap],
    parameters={"tier": "fast"},
    accessibility_requirements=csi.TopologyRequirement(requisite=[ni.accessible_topology]),
)
vol = rpc("Controller", "CreateVolume", create, csi.CreateVolumeResponse).volume
again = rpc("Controller", "CreateVolume", create, csi.CreateVolumeResponse).volume
out["capacity_bytes"] = vol.capacity_bytes
out["create_idempotent"] = again.volume_id == vol.volume_id
create.capacity_range.limit_bytes = create.capacity_range.required_bytes = 9 * 1024 * 1024
out["create_incompatible"] = code_of(lambda: rpc("Controller", "CreateVolume", create, csi.CreateVolumeResponse))

pub = rpc("Controller", "ControllerPublishVolume",
          csi.ControllerPublishVolumeRequest(volume_id=vol.volume_id, node_id=node_id, volume_capability=cap),
          csi.ControllerPublishVolumeResponse)
out["publish_context_keys"] = sorted(pub.publish_context.keys())
staging = os.path.join(kubelet, "plugins", "peer", "globalmount")
target = os.path.join(kubelet, "pods", "peer", "mount")
os.makedirs(staging, exist_ok=True)
rpc("Node", "NodeStageVolume", csi.NodeStageVolumeRequest(
    volume_id=vol.volume_id, staging_target_path=staging, volume_capability=cap,
    publish_context=pub.publish_context), csi.NodeStageVolumeResponse)
rpc("Node", "NodePublishVolume", csi.NodePublishVolumeRequest(
    volume_id=vol.volume_id, staging_target_path=staging, target_path=target, volume_capability=cap,
    publish_context=pub.publish_context), csi.NodePublishVolumeResponse)
if os.path.isdir(target):  # hostpath: a real mount; sim: the directory NodePublishVolume created
    with open(os.path.join(target, "from-python"), "w") as f:
        f.write("hello")
stats = rpc("Node", "NodeGetVolumeStats", csi.NodeGetVolumeStatsRequest(volume_id=vol.volume_id, volume_path=target),
            csi.NodeGetVolumeStatsResponse)
out["stats"] = {csi.VolumeUsage.Unit.Name(u.unit): {"total": u.total, "used": u.used} for u in stats.usage}
out["condition_abnormal"] = stats.volume_condition.abnormal
lv = rpc("Controller", "ListVolumes", csi.ListVolumesRequest(max_entries=10), csi.ListVolumesResponse)
out["listed"] = [(e.volume.volume_id == vol.volume_id, list(e.status.published_node_ids)) for e in lv.entries]
snap = rpc("Controller", "CreateSnapshot", csi.CreateSnapshotRequest(name="peer-snap", source_volume_id=vol.volume_id),
           csi.CreateSnapshotResponse).snapshot
out["snapshot"] = {"ready": snap.ready_to_use, "size": snap.size_bytes, "has_time": snap.creation_time.seconds > 0}
gc = rpc("Controller", "GetCapacity", csi.GetCapacityRequest(accessible_topology=ni.accessible_topology), csi.GetCapacityResponse)
out["capacity"] = {"available": gc.available_capacity, "max": gc.maximum_volume_size.value}

out["errors"] = {
    "create_without_name": code_of(lambda: rpc("Controller", "CreateVolume", csi.CreateVolumeRequest(volume_capabilities=[cap]), csi.CreateVolumeResponse)),
    "list_bad_token": code_of(lambda: rpc("Controller", "ListVolumes", csi.ListVolumesRequest(starting_token="nope"), csi.ListVolumesResponse)),
    "delete_unknown": code_of(lambda: rpc("Controller", "DeleteVolume", csi.DeleteVolumeRequest(volume_id="unknown"), csi.DeleteVolumeResponse)),
    "stage_unknown": code_of(lambda: rpc("Node", "NodeStageVolume", csi.NodeStageVolumeRequest(volume_id="unknown", staging_target_path=staging, volume_capability=cap), csi.NodeStageVolumeResponse)),
    "unstage_while_published": code_of(lambda: rpc("Node", "NodeUnstageVolume", csi.NodeUnstageVolumeRequest(volume_id=vol.volume_id, staging_target_path=staging), csi.NodeUnstageVolumeResponse)),
    "delete_while_published": code_of(lambda: rpc("Controller", "DeleteVolume", csi.DeleteVolumeRequest(volume_id=vol.volume_id), csi.DeleteVolumeResponse)),
    "traversal_name": code_of(lambda: rpc("Controller", "CreateVolume", csi.CreateVolumeRequest(name="../x", volume_capabilities=[cap]), csi.CreateVolumeResponse)),
}

rpc("Node", "NodeUnpublishVolume", csi.NodeUnpublishVolumeRequest(volume_id=vol.volume_id, target_path=target), csi.NodeUnpublishVolumeResponse)
rpc("Node", "NodeUnstageVolume", csi.NodeUnstageVolumeRequest(volume_id=vol.volume_id, staging_target_path=staging), csi.NodeUnstageVolumeResponse)
rpc("Controller", "ControllerUnpublishVolume", csi.ControllerUnpublishVolumeRequest(volume_id=vol.volume_id, node_id=node_id), csi.ControllerUnpublishVolumeResponse)
restored = rpc("Controller", "CreateVolume", csi.CreateVolumeRequest(
    name="peer-restored", volume_capabilities=[cap],
    volume_content_source=csi.VolumeContentSource(snapshot=csi.VolumeContentSource.SnapshotSource(snapshot_id=snap.snapshot_id))),
    csi.CreateVolumeResponse).volume
out["restored_from"] = restored.content_source.snapshot.snapshot_id == snap.snapshot_id
out["restored_id"] = restored.volume_id
rpc("Controller", "DeleteSnapshot", csi.DeleteSnapshotRequest(snapshot_id=snap.snapshot_id), csi.DeleteSnapshotResponse)
rpc("Controller", "DeleteVolume", csi.DeleteVolumeRequest(volume_id=restored.volume_id), csi.DeleteVolumeResponse)
rpc("Controller", "DeleteVolume", csi.DeleteVolumeRequest(volume_id=vol.volume_id), csi.DeleteVolumeResponse)
out["target_removed"] = not os.path.exists(target)
out["left"] = len(rpc("Controller", "ListVolumes", csi.ListVolumesRequest(), csi.ListVolumesResponse).entries)

rchan = grpc.insecure_channel("unix://" + reg_sock)
ri = rchan.unary_unary("/pluginregistration.Registration/GetInfo",
                       request_serializer=lambda m: m.SerializeToString(),
                       response_deserializer=reg.PluginInfo.FromString)(reg.InfoRequest(), timeout=10)
out["registration"] = {"type": ri.type, "name": ri.name, "endpoint": ri.endpoint, "versions": list(ri.supported_versions)}
rchan.unary_unary("/pluginregistration.Registration/NotifyRegistrationStatus",
                  request_serializer=lambda m: m.SerializeToString(),
                  response_deserializer=reg.RegistrationStatusResponse.FromString)(reg.RegistrationStatus(plugin_registered=True), timeout=10)

print(json.dumps(out))
