// ImageService handlers over the runtime core's image store.
import type { cri, ServiceHandlers } from '@kemu/proto';
import type { CriRuntime } from './runtime.js';

export type ImageServiceHandlers = Required<ServiceHandlers<cri.ImageServiceMethods>>;

export function createImageService(runtime: CriRuntime): ImageServiceHandlers {
  return {
    ListImages: async (req) => runtime.listImages(req),
    StreamImages: async function* (req) {
      yield { images: runtime.listImages({ filter: req.filter }).images };
    },
    ImageStatus: async (req) => runtime.imageStatus(req),
    PullImage: (req) => runtime.pullImage(req),
    RemoveImage: (req) => runtime.removeImage(req),
    ImageFsInfo: async () => runtime.imageFsInfo(),
  };
}
