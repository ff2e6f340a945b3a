// An out-of-tree Score plugin for kemu-scheduler: nodes carrying the configured label score 100.
//
//   kemu-scheduler simulate --cluster cluster.yaml --pods pods.yaml \
//     --plugin examples/prefer-label.mjs --config examples/prefer-label-config.yaml
//
// A plugin module exports `plugins`: a map from plugin name to factory `(args, handle) => plugin`.
// The plugin object has a `name` and one method per extension point it implements.
export const plugins = {
  PreferLabel: (args) => {
    const key = args?.key ?? 'example.com/preferred';
    return {
      name: 'PreferLabel',
      score(_state, _podInfo, nodeInfo) {
        return nodeInfo.labels?.[key] !== undefined ? 100 : 0;
      },
      // Retry pods this plugin rejected only when nodes change (it rejects nothing, but say so anyway).
      eventsToRegister: () => [{ resource: 'Node', action: '*' }],
    };
  },
};
