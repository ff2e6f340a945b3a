// The kubelet's image garbage collector (upstream pkg/kubelet/images/image_gc_manager.go): tracks when each
// image was first seen and last used by a container; when the image filesystem is above
// imageGCHighThresholdPercent it removes unused images, least recently used first, until usage is down to
// imageGCLowThresholdPercent. Images younger than imageMinimumGCAge and pinned images stay. Under disk
// pressure the eviction manager asks it to remove every unused image before evicting pods.
import type { cri } from '@kemu/proto';
import type { ImageApi, RuntimeApi } from './types.js';

export interface ImageGCOptions {
  highPercent: number;
  lowPercent: number;
  minAgeMs: number;
  /** Capacity of the image filesystem in bytes. */
  capacityBytes: () => number;
  now?: () => number;
  onRemoved?: (image: cri.Image) => void;
}

interface Record {
  firstDetected: number;
  lastUsed: number;
  size: number;
}

export class ImageGCManager {
  private readonly records = new Map<string, Record>();
  private readonly now: () => number;

  constructor(
    private readonly images: ImageApi,
    private readonly runtime: RuntimeApi,
    private readonly o: ImageGCOptions,
  ) {
    this.now = o.now ?? Date.now;
  }

  /** Refreshes the records: new images, and the last use of those some container holds. */
  private async detect(): Promise<{ list: cri.Image[]; inUse: Set<string> }> {
    const now = this.now();
    const [{ images = [] }, { containers = [] }] = await Promise.all([this.images.ListImages({}), this.runtime.ListContainers({})]);
    const inUse = new Set<string>();
    for (const c of containers) {
      if (c.imageRef) inUse.add(c.imageRef);
      if (c.image?.image) inUse.add(c.image.image);
    }
    const used = (img: cri.Image) => inUse.has(img.id ?? '') || (img.repoTags ?? []).some((t) => inUse.has(t)) || (img.repoDigests ?? []).some((d) => inUse.has(d));
    const present = new Set<string>();
    for (const img of images) {
      const id = img.id ?? '';
      present.add(id);
      const r = this.records.get(id) ?? { firstDetected: now, lastUsed: 0, size: Number(img.size ?? 0) };
      if (used(img)) r.lastUsed = now;
      r.size = Number(img.size ?? 0);
      this.records.set(id, r);
    }
    for (const id of [...this.records.keys()]) if (!present.has(id)) this.records.delete(id);
    return { list: images, inUse: new Set(images.filter(used).map((i) => i.id ?? '')) };
  }

  /** Removes unused images, least recently used first, until `bytesToFree` are freed (all of them with Infinity). */
  async freeSpace(bytesToFree: number): Promise<number> {
    const { list, inUse } = await this.detect();
    const now = this.now();
    const candidates = list
      .filter((img) => !inUse.has(img.id ?? '') && !img.pinned)
      .filter((img) => now - (this.records.get(img.id ?? '')?.firstDetected ?? now) >= this.o.minAgeMs)
      .sort((a, b) => (this.records.get(a.id ?? '')!.lastUsed - this.records.get(b.id ?? '')!.lastUsed) || (a.id ?? '').localeCompare(b.id ?? ''));
    let freed = 0;
    for (const img of candidates) {
      if (freed >= bytesToFree) break;
      await this.images.RemoveImage({ image: { image: img.id ?? '' } });
      this.records.delete(img.id ?? '');
      freed += Number(img.size ?? 0);
      this.o.onRemoved?.(img);
    }
    return freed;
  }

  /** Every unused image (the eviction manager's node-level reclaim under disk pressure). */
  deleteUnusedImages(): Promise<number> {
    return this.freeSpace(Infinity);
  }

  /** One periodic pass (upstream GarbageCollect): above the high threshold, free down to the low one. */
  async garbageCollect(): Promise<number> {
    const fs = await this.images.ImageFsInfo({});
    const used = Number(fs.imageFilesystems?.[0]?.usedBytes?.value ?? 0);
    const capacity = this.o.capacityBytes();
    if (capacity <= 0) return 0;
    const usagePercent = (used * 100) / capacity;
    if (usagePercent < this.o.highPercent) {
      await this.detect();
      return 0;
    }
    return this.freeSpace(used - (capacity * this.o.lowPercent) / 100);
  }
}
