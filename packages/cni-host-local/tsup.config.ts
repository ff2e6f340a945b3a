// The same three outputs as every kemu CNI plugin: see @kemu/cni's build/plugin-tsup.ts.
import { pluginTsupConfig } from '../cni/build/plugin-tsup';

export default pluginTsupConfig();
