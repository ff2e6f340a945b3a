import type { BindPlugin, PluginFactory } from '../framework.js';
import { DefaultBinder } from './names.js';

/** Binds through the client (Binding semantics: spec.nodeName with a conflict check). */
export const newDefaultBinder: PluginFactory = (_a, handle): BindPlugin => ({
  name: DefaultBinder,
  async bind(_s, pi, nodeName) {
    await handle.client.bind(pi.pod, nodeName);
    return null;
  },
});
