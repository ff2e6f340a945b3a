import { type Datapath, isDatapathError } from './datapath.js';
import { CniError, CniErrorCode } from './errors.js';

/**
 * The container namespace of a call (CNI_NETNS) must exist and be a network namespace: otherwise code 4
 * (invalid environment) naming the path and why, before anything is created.
 */
export async function requireNetns(dp: Datapath, netns: string): Promise<void> {
  let exists: boolean;
  try {
    exists = await dp.netnsExists(netns);
  } catch (e) {
    // Not a namespace at all; any other failure (the datapath's own state unreadable, ...) stays what it is.
    if (isDatapathError(e, 'EINVAL')) {
      throw new CniError(CniErrorCode.InvalidEnvironment, `failed to open netns "${netns}": ${e.message}`);
    }
    throw e;
  }
  if (!exists) throw new CniError(CniErrorCode.InvalidEnvironment, `failed to open netns "${netns}": no such file or directory`);
}
