// A consumer's first file: types and values from the published @kemu/proto.
import { cri, csi, grpc, pluginregistration, unaryCall } from '@kemu/proto';

const req: cri.RunPodSandboxRequest = { config: { metadata: { name: 'web', namespace: 'default', uid: 'u', attempt: 0 } } };
const mode: csi.VolumeCapability_AccessMode_Mode = csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER;
const info: pluginregistration.PluginInfo = { type: 'CSIPlugin', name: 'x', endpoint: '/e', supportedVersions: ['1.0.0'] };
const client = new cri.RuntimeServiceClient('unix:///tmp/x.sock', grpc.credentials.createInsecure());
const pending: Promise<cri.VersionResponse> = unaryCall(client, 'Version', { version: 'v1' });
void [req, mode, info, pending];
