/** Page size of every list endpoint: `limit` defaults to 50, and values above 200 are treated as 200. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export const pageSize = (limit: number | undefined) => Math.min(limit ?? DEFAULT_LIMIT, MAX_LIMIT);
