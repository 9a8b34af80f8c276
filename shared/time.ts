/** The clock, injectable so tests can drive time-dependent behaviour. */
let now: () => number = () => Date.now();

export const clock = {
  nowMs: (): number => now(),
  nowSeconds: (): number => Math.floor(now() / 1000),
  /** Replace the clock (tests only); returns a function that restores the previous one. */
  set(fn: () => number): () => void {
    const previous = now;
    now = fn;
    return () => {
      now = previous;
    };
  },
};
