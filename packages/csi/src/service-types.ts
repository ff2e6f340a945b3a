import type { MethodShape } from '@kemu/proto';

/**
 * A service object: every RPC as an async function of its request. The same objects are served over the
 * socket (through implementService) and called directly by in-process callers.
 */
export type UnaryService<M> = {
  [K in keyof M]: M[K] extends MethodShape ? (request: M[K]['request']) => Promise<M[K]['response']> : never;
};
