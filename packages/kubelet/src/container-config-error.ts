// A container that cannot be configured (the kubelet's CreateContainerConfigError): a missing ConfigMap,
// Secret or key, a bad subPath. The pod worker holds the container back with the message and retries.
export class ContainerConfigError extends Error {
  override readonly name = 'ContainerConfigError';
}
