// The error a client of the local socket gets when no server listens there, with the way out.
export class ClusterUnreachableError extends Error {
  constructor(
    readonly socketPath: string,
    cause: string,
  ) {
    super(
      `cannot reach the kemu cluster at ${socketPath} (${cause}): start one with \`kemu up\`, or pass --state-dir of a running one`,
    );
    this.name = 'ClusterUnreachableError';
  }
}
