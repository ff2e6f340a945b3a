// Controller expectations (upstream ControllerExpectations): after asking for N creates or deletes, a
// controller waits until its informer has seen them before it counts pods again, so a slow cache never
// makes it create twice. Expectations expire after five minutes in case an event is lost.

const TTL_MS = 5 * 60 * 1000;

interface Expectation {
  add: number;
  del: number;
  at: number;
}

export class Expectations {
  private readonly map = new Map<string, Expectation>();

  expect(key: string, add: number, del: number): void {
    this.map.set(key, { add, del, at: Date.now() });
  }

  creationObserved(key: string): void {
    const e = this.map.get(key);
    if (e) e.add--;
  }

  deletionObserved(key: string): void {
    const e = this.map.get(key);
    if (e) e.del--;
  }

  /** Lower the counts when a create or delete was never sent (it failed). */
  lower(key: string, add: number, del: number): void {
    const e = this.map.get(key);
    if (e) {
      e.add -= add;
      e.del -= del;
    }
  }

  satisfied(key: string): boolean {
    const e = this.map.get(key);
    if (!e) return true;
    return (e.add <= 0 && e.del <= 0) || Date.now() - e.at > TTL_MS;
  }

  delete(key: string): void {
    this.map.delete(key);
  }
}
