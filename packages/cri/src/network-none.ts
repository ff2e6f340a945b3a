// What containerd does with no CNI configuration: NetworkReady=false, and only host-network pods run.
import { failedPrecondition } from './errors.js';
import type { NetworkManager, NetworkStatus, PodNetworkRequest, PodNetworkResult } from './types.js';

export class NoNetwork implements NetworkManager {
  readonly name = 'none';

  constructor(private readonly why = 'cni plugin not initialized') {}

  status(): NetworkStatus {
    return { ready: false, reason: 'NetworkPluginNotReady', message: `Network plugin returns error: ${this.why}` };
  }

  async setUp(req: PodNetworkRequest): Promise<PodNetworkResult> {
    throw failedPrecondition(`failed to setup network for sandbox ${JSON.stringify(req.sandboxId)}: ${this.why}`);
  }

  async tearDown(): Promise<void> {}

  async updatePodCidr(): Promise<void> {}
}
