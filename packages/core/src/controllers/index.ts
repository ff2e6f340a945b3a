// Storage controllers (PV binder, attach/detach) built on the store, informers and work queues.
// Imported as `@kemu/core/controllers`.
export * from './annotations.js';
export {
  EventRecorder,
  type EventRecorderOptions,
  type EventType,
  objectRef,
  type RecordedEvent,
} from './events.js';
export {
  checkAccessModes,
  checkVolumeSatisfyClaim,
  claimClass,
  claimRequestBytes,
  findBestMatchForClaim,
  findMatchingVolume,
  isVolumeBoundToClaim,
  type MatchOptions,
  volumeCapacityBytes,
  volumeClass,
  volumeModeMismatch,
  volumeNodeAffinityMatches,
} from './pv-matching.js';
export { isDelayBindingMode, PersistentVolumeBinder, type PVBinderOptions } from './pv-binder.js';
export {
  AttachDetachController,
  type AttachDetachOptions,
  attachmentName,
  csiUniqueVolumeName,
} from './attach-detach.js';
export { EphemeralVolumeController, type EphemeralVolumeControllerOptions } from './ephemeral-volume.js';
