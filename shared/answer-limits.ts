/** Page size of every list endpoint: `limit` defaults to 50, and values above 200 are treated as 200. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export const pageSize = (limit: number | undefined) => Math.min(limit ?? DEFAULT_LIMIT, MAX_LIMIT);

/**
 * API Gateway and Lambda carry at most 6 MB per answer (Lambda's limit applies to the whole result,
 * headers and envelope included). Every answer that can carry mail content is kept under this many
 * bytes of JSON, which leaves room for the rest: list pages end early (with a `next_cursor`) rather
 * than grow past it, and a single object larger than it serves its largest content through a URL.
 */
export const ANSWER_BUDGET_BYTES = 5 * 1024 * 1024;

/** Bytes of an item in a JSON answer (its JSON text, and the comma that separates it from the next). */
export const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value)) + 1;

/**
 * How many of `sizes` (bytes, in page order) fit the budget together: always at least one, so a page
 * of large items still moves forward one at a time.
 */
export function countWithinBudget(sizes: readonly number[], budget = ANSWER_BUDGET_BYTES): number {
  let total = 0;
  for (let i = 0; i < sizes.length; i++) {
    total += sizes[i]!;
    if (total > budget) return Math.max(1, i);
  }
  return sizes.length;
}
