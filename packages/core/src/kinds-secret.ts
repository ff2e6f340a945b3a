// Registration of the Secret kind (`v1`): kind registry entry (field selector `type`), its TypeScript type
// in KindMap, and its write hooks: stringData merged into data, validation, immutability on update.
import type { Secret } from './api-secret.js';
import { prepareSecret } from './api-secret.js';
import { registerKindHooks } from './kind-hooks.js';
import { registerKind } from './kinds.js';
import { secretUpdateErrors, validateSecret } from './validation-secret.js';

declare module './kinds.js' {
  interface KindMap {
    Secret: Secret;
  }
}

/** The kind this module registers (importing it registers it). */
export const SECRET_KIND = 'Secret';

registerKind({
  kind: SECRET_KIND,
  apiVersion: 'v1',
  resource: 'secrets',
  namespaced: true,
  hasStatus: false,
  fields: { type: (o: Secret) => (o.type === undefined || o.type === null ? '' : String(o.type)) },
});
registerKindHooks(SECRET_KIND, {
  defaults: (obj) => prepareSecret(obj as Secret),
  validate: (e, obj) => validateSecret(e, obj as Secret),
  validateUpdate: (e, next, prev) => secretUpdateErrors(e, next as Secret, prev as Secret),
});
