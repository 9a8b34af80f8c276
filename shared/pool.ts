/** Runs `run` over `items` with at most `concurrency` calls in flight, in order of start; resolves when all are done (rejects on the first failure). */
export async function inPool<T>(
  items: readonly T[],
  concurrency: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await run(items[next++]!);
    }),
  );
}
