// Storage controllers (PV binder, attach/detach) built on the store, informers and work queues.
// Imported as `@kemu/core/controllers`.
export {};
