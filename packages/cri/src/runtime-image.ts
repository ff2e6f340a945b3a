// ImageService RPCs over the image store: ListImages, ImageStatus, PullImage, RemoveImage, ImageFsInfo.
import type { cri } from '@kemu/proto';
import { toImage } from './convert.js';
import { errorMessage, failedPrecondition, invalidArgument } from './errors.js';
import { credentialsFromAuthConfig } from './registry-auth.js';
import type { RuntimeContext } from './runtime-context.js';
import { nowNs } from './time.js';

export function listImages(ctx: RuntimeContext, req: cri.ListImagesRequest): cri.ListImagesResponse {
  const want = req.filter?.image?.image;
  let images = ctx.images.list();
  if (want) {
    const one = ctx.images.resolve(want);
    images = one ? [one] : [];
  }
  return { images: images.map(toImage) };
}

export function imageStatus(ctx: RuntimeContext, req: cri.ImageStatusRequest): cri.ImageStatusResponse {
  const ref = req.image?.image;
  if (!ref) throw invalidArgument('image spec must name an image');
  const img = ctx.images.resolve(ref);
  if (!img) return { image: null, info: {} };
  const info: Record<string, string> = {};
  if (req.verbose) {
    const c = img.config;
    info.info = JSON.stringify({
      // Both spellings: the OCI image config's own (what `crictl inspecti` shows from containerd) and ours.
      imageSpec: {
        config: {
          ...c,
          User: c.user,
          Env: c.env,
          Entrypoint: c.entrypoint,
          Cmd: c.cmd,
          WorkingDir: c.workingDir,
          ExposedPorts: c.exposedPorts ? Object.fromEntries(c.exposedPorts.map((p) => [p, {}])) : undefined,
          Labels: c.labels,
          StopSignal: c.stopSignal,
        },
      },
      source: img.source,
      sourcePath: img.sourcePath ?? '',
      manifestDigest: img.manifestDigest ?? '',
      layers: img.layers.length,
    });
  }
  return { image: toImage(img), info };
}

export async function pullImage(ctx: RuntimeContext, req: cri.PullImageRequest): Promise<cri.PullImageResponse> {
  const ref = req.image?.image;
  if (!ref) throw invalidArgument('image spec must name an image');
  let creds;
  try {
    creds = credentialsFromAuthConfig(req.auth);
  } catch (err) {
    throw invalidArgument(errorMessage(err));
  }
  const img = await ctx.images.pull(ref, creds);
  return { imageRef: img.id };
}

export async function removeImage(ctx: RuntimeContext, req: cri.RemoveImageRequest): Promise<cri.RemoveImageResponse> {
  const ref = req.image?.image;
  if (!ref) throw invalidArgument('image spec must name an image');
  const img = ctx.images.resolve(ref);
  if (img) {
    const users = [...ctx.containers.values()].filter((c) => c.imageId === img.id).map((c) => c.id.slice(0, 13));
    if (users.length) {
      throw failedPrecondition(`image ${JSON.stringify(ref)} (${img.id}) is in use by container(s) ${users.join(', ')}: remove them first`);
    }
  }
  await ctx.images.remove(ref);
  return {};
}

export function imageFsInfo(ctx: RuntimeContext): cri.ImageFsInfoResponse {
  const fsi = ctx.images.fsInfo();
  const usage = {
    timestamp: nowNs(),
    fsId: { mountpoint: fsi.mountpoint },
    usedBytes: { value: fsi.usedBytes },
    inodesUsed: { value: fsi.inodesUsed },
  };
  return { imageFilesystems: [usage], containerFilesystems: [usage] };
}
