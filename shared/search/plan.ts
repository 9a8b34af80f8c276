import type { Segment } from '#shared/search/segment';

/**
 * A query over a search index, in tokens: every group of `all` must match (a group matches when
 * any of its tokens is present: one group per filter address list, one per word), and none of
 * `none` may be present.
 */
export interface TokenQuery {
  all: readonly (readonly string[])[];
  none: readonly string[];
}

/** Whether a document with these tokens matches. */
export function tokensMatch(tokens: ReadonlySet<string>, q: TokenQuery): boolean {
  return q.all.every((group) => group.some((t) => tokens.has(t))) && !q.none.some((t) => tokens.has(t));
}

/** Index of the first element ≥ value in an ascending list. */
function lowerBound(list: ArrayLike<number>, value: number, from = 0): number {
  let lo = from;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const has = (list: ArrayLike<number>, value: number) => {
  const i = lowerBound(list, value);
  return i < list.length && list[i] === value;
};

/** The part of an ascending list within [lo, hi). */
function clip(list: Uint32Array, lo: number, hi: number): Uint32Array {
  return list.subarray(lowerBound(list, lo), lowerBound(list, hi));
}

function union(lists: Uint32Array[]): Uint32Array {
  const nonEmpty = lists.filter((l) => l.length);
  if (nonEmpty.length <= 1) return nonEmpty[0] ?? new Uint32Array(0);
  const all = new Uint32Array(nonEmpty.reduce((n, l) => n + l.length, 0));
  let k = 0;
  for (const l of nonEmpty) {
    all.set(l, k);
    k += l.length;
  }
  all.sort();
  // Distinct values only.
  let w = 0;
  for (let r = 0; r < all.length; r++) if (r === 0 || all[r] !== all[r - 1]) all[w++] = all[r]!;
  return all.subarray(0, w);
}

/** Ascending doc numbers of `a` that are (or, with `keep` false, are not) in `b`. */
function filterBy(a: Uint32Array, b: Uint32Array, keep: boolean): Uint32Array {
  const out = new Uint32Array(a.length);
  let w = 0;
  if (b.length > a.length * 8) {
    // Far longer list: binary searches, galloping from the last hit.
    let from = 0;
    for (const x of a) {
      from = lowerBound(b, x, from);
      const present = from < b.length && b[from] === x;
      if (present === keep) out[w++] = x;
    }
  } else {
    let j = 0;
    for (const x of a) {
      while (j < b.length && b[j]! < x) j++;
      const present = j < b.length && b[j] === x;
      if (present === keep) out[w++] = x;
    }
  }
  return out.subarray(0, w);
}

/** Every doc number in [lo, hi). */
function range(lo: number, hi: number): Uint32Array {
  const out = new Uint32Array(hi - lo);
  for (let i = 0; i < out.length; i++) out[i] = lo + i;
  return out;
}

/**
 * Doc numbers of `segment` in [lo, hi) that match `q`, ascending (newest first), leaving out
 * `deleted`. Without a required group, every document of the range not excluded matches (a scan of
 * the range: callers narrow it with `none`, or take few).
 */
export function segmentMatches(
  segment: Segment,
  q: TokenQuery,
  lo: number,
  hi: number,
  deleted?: ReadonlySet<number>,
): Uint32Array {
  if (lo >= hi) return new Uint32Array(0);
  const groups = q.all
    .map((group) => union(group.map((t) => clip(segment.postings(t), lo, hi))))
    .sort((a, b) => a.length - b.length);
  let result = groups[0] ?? range(lo, hi);
  for (const g of groups.slice(1)) {
    if (!result.length) break;
    result = filterBy(result, g, true);
  }
  for (const t of q.none) {
    if (!result.length) break;
    const excluded = clip(segment.postings(t), lo, hi);
    if (excluded.length) result = filterBy(result, excluded, false);
  }
  if (deleted?.size && result.length) result = result.filter((n) => !deleted.has(n));
  return result;
}

/** Whether doc `n` of `segment` matches `q`. */
export function docMatches(segment: Segment, n: number, q: TokenQuery): boolean {
  return (
    q.all.every((group) => group.some((t) => has(segment.postings(t), n))) &&
    !q.none.some((t) => has(segment.postings(t), n))
  );
}
