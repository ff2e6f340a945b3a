// The next item of an async iterator, or 'aborted' as soon as the signal fires, whichever comes first.
// Racing every `next()` against one long-lived "aborted" promise would add a reaction to that promise per
// item and keep each item reachable until the abort: a kubelet's container event stream would hold every
// event it ever received. Here the abort listener lives only as long as one wait.

export async function nextOrAbort<T>(it: AsyncIterator<T>, signal: AbortSignal): Promise<IteratorResult<T> | 'aborted'> {
  if (signal.aborted) return 'aborted';
  const next = it.next();
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
    next.then(
      (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
