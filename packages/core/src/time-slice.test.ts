import { describe, expect, it } from 'vitest';
import { TimeSlice } from './time-slice.js';

describe('TimeSlice', () => {
  it('lets the event loop turn once its slice is spent, and not before', async () => {
    const slice = new TimeSlice(60_000);
    let turned = false;
    setImmediate(() => (turned = true));
    await slice.maybeYield();
    expect(turned).toBe(false);
    await new TimeSlice(0).maybeYield();
    expect(turned).toBe(true);
  });

  it('takes a longer or shorter slice for one check when given one', async () => {
    const slice = new TimeSlice(0);
    let turned = false;
    setImmediate(() => (turned = true));
    await slice.maybeYield(60_000);
    expect(turned).toBe(false);
    await slice.maybeYield();
    expect(turned).toBe(true);
  });
});
