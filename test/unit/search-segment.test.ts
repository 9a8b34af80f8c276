import { describe, expect, it } from 'vitest';
import { newId } from '#shared/ids';
import { docMatches, segmentMatches, tokensMatch, type TokenQuery } from '#shared/search/plan';
import {
  Segment,
  SegmentFormatError,
  encodeSegment,
  mergeSegments,
  tokenBytes,
  writeSegment,
} from '#shared/search/segment';
import { finalSteps, planMerges, MERGE_FACTOR } from '#shared/search/tiers';
import { ByteLru } from '#shared/search/cache';
import { rng } from '../../bench/lib';

const VOCABULARY = [
  't:budget',
  't:zebra',
  't:lunch',
  't:ünïcode',
  't:日本',
  's:invoice',
  'a:from:ann@x.io',
  'a:any:ann@x.io',
  'a:to:bo@x.io',
  'has:attachment',
  't:🙂emoji',
];

/** `count` documents with IDs spread over time and random tokens. */
function makeDocs(count: number, seed: number, start = 1_700_000_000_000) {
  const random = rng(seed);
  return Array.from({ length: count }, (_, i) => ({
    id: newId('message', start + i * 1000 + Math.floor(random() * 500)) as string,
    tokens: VOCABULARY.filter(() => random() < 0.35),
  }));
}

/** Brute force: IDs of docs matching q, newest first. */
const expected = (docs: { id: string; tokens: string[] }[], q: TokenQuery) =>
  docs
    .filter((d) => tokensMatch(new Set(d.tokens), q))
    .map((d) => d.id)
    .sort()
    .reverse();

const idsOf = (segment: Segment, docs: ArrayLike<number>) => Array.from(docs, (n) => segment.idAt(n));

describe('Function: encodeSegment / Segment', () => {
  it('round-trips documents and their tokens, newest first', () => {
    // Prepare
    const docs = makeDocs(200, 1);

    // Act
    const segment = new Segment(encodeSegment(docs));

    // Assess
    expect(segment.docCount).toBe(200);
    const ids = Array.from({ length: segment.docCount }, (_, n) => segment.idAt(n));
    expect(ids).toEqual(
      docs
        .map((d) => d.id)
        .sort()
        .reverse(),
    );
    for (const token of [...VOCABULARY, 't:absent']) {
      expect(idsOf(segment, segment.postings(token)), token).toEqual(expected(docs, { all: [[token]], none: [] }));
    }
    for (const d of docs) expect(segment.findDoc(d.id)).toBe(ids.indexOf(d.id));
    expect(segment.findDoc(newId('message', 1))).toBe(-1);
    expect(segment.findDoc('thr_01jzzzzzzzzzzzzzzzzzzzzzzz')).toBe(-1);
  });

  it('maps ID ranges to doc number ranges, bounds excluded', () => {
    const docs = makeDocs(50, 2);
    const segment = new Segment(encodeSegment(docs));
    const sorted = docs
      .map((d) => d.id)
      .sort()
      .reverse();
    const within = (after?: string, before?: string) => {
      const [lo, hi] = segment.docRange({ after, before });
      return Array.from({ length: hi - lo }, (_, k) => segment.idAt(lo + k));
    };
    expect(within()).toEqual(sorted);
    expect(within(undefined, sorted[10])).toEqual(sorted.slice(11));
    expect(within(sorted[40], undefined)).toEqual(sorted.slice(0, 40));
    expect(within(sorted[30], sorted[10])).toEqual(sorted.slice(11, 30));
    // Time bounds that are not IDs of any document (received_after / received_before).
    expect(within(`msg_${'0'.repeat(26)}`, `msg_${'z'.repeat(26)}`)).toEqual(sorted);
    expect(within(`msg_${'z'.repeat(26)}`)).toEqual([]);
  });

  it('refuses what is not a segment, and unsorted input', () => {
    expect(() => new Segment(Buffer.from('not a segment at all, really'))).toThrow(SegmentFormatError);
    const bytes = encodeSegment(makeDocs(5, 3));
    expect(() => new Segment(bytes.subarray(0, bytes.length - 1))).toThrow(SegmentFormatError);
    const [a, b] = makeDocs(2, 4)
      .map((d) => d.id)
      .sort();
    expect(() => writeSegment([a!, b!], [])).toThrow(/newest first/);
    expect(() =>
      writeSegment(
        [b!, a!],
        [
          { token: tokenBytes('t:b'), docs: [0] },
          { token: tokenBytes('t:a'), docs: [1] },
        ],
      ),
    ).toThrow(/sorted/);
    expect(() => writeSegment([b!, a!], [{ token: tokenBytes('t:a'), docs: [1, 0] }])).toThrow(/ascend/);
    expect(() => writeSegment(['thr_01jzzzzzzzzzzzzzzzzzzzzzzz'], [])).toThrow(/message ID/);
  });

  it('holds an empty segment', () => {
    const segment = new Segment(encodeSegment([]));
    expect(segment.docCount).toBe(0);
    expect(segment.postings('t:x')).toHaveLength(0);
    expect(segment.docRange({})).toEqual([0, 0]);
  });
});

describe('Function: mergeSegments', () => {
  it('gives the segment of the union, less dropped and deleted documents', () => {
    // Prepare: three segments and loose documents, a dropped ID and deleted doc numbers.
    const groups = [
      makeDocs(120, 10, 1_700_000_000_000),
      makeDocs(80, 11, 1_700_000_050_000),
      makeDocs(60, 12, 1_700_000_200_000),
    ];
    const loose = makeDocs(15, 13, 1_700_000_500_000);
    const segments = groups.map((g) => new Segment(encodeSegment(g)));
    const deleted = new Set([0, 5, 17]);
    const dropped = new Set([groups[1]![3]!.id, loose[2]!.id]);

    // Act
    const merged = new Segment(
      mergeSegments(
        [{ segment: segments[0]!, deleted }, { segment: segments[1]! }, { segment: segments[2]! }],
        loose,
        dropped,
      ),
    );

    // Assess: the same segment as encoding the surviving documents directly.
    const deletedIds = new Set([...deleted].map((n) => segments[0]!.idAt(n)));
    const survivors = [...groups.flat(), ...loose].filter((d) => !dropped.has(d.id) && !deletedIds.has(d.id));
    expect(merged.bytes.equals(encodeSegment(survivors))).toBe(true);
    expect(merged.docCount).toBe(120 + 80 + 60 + 15 - 3 - 2);
  });

  it('keeps one copy of a document found in a segment and among the loose ones', () => {
    const docs = makeDocs(10, 20);
    const merged = new Segment(mergeSegments([{ segment: new Segment(encodeSegment(docs)) }], [docs[4]!]));
    expect(merged.docCount).toBe(10);
    expect(merged.bytes.equals(encodeSegment(docs))).toBe(true);
  });
});

describe('Function: segmentMatches / docMatches', () => {
  const docs = makeDocs(400, 30);
  const segment = new Segment(encodeSegment(docs));
  const queries: TokenQuery[] = [
    { all: [['t:budget']], none: [] },
    { all: [['t:budget'], ['t:zebra']], none: [] },
    { all: [['a:from:ann@x.io', 'a:to:bo@x.io']], none: [] },
    { all: [['a:from:ann@x.io', 'a:to:bo@x.io'], ['s:invoice']], none: ['t:lunch'] },
    { all: [['t:日本'], ['has:attachment']], none: ['t:ünïcode', 't:🙂emoji'] },
    { all: [['t:absent']], none: [] },
    // No required group: every document not excluded.
    { all: [], none: ['t:budget'] },
  ];

  it.each(queries.map((q) => [JSON.stringify(q), q] as const))('matches brute force for %s', (_, q) => {
    expect(idsOf(segment, segmentMatches(segment, q, 0, segment.docCount))).toEqual(expected(docs, q));
    for (const [n] of docs.entries())
      expect(docMatches(segment, n, q)).toBe(expected(docs, q).includes(segment.idAt(n)));
  });

  it('restricts to a doc range and leaves deleted documents out', () => {
    const q = queries[0]!;
    const all = idsOf(segment, segmentMatches(segment, q, 0, segment.docCount));
    const ranged = idsOf(segment, segmentMatches(segment, q, 100, 200));
    expect(ranged).toEqual(all.filter((id) => segment.findDoc(id) >= 100 && segment.findDoc(id) < 200));
    const deleted = new Set([segment.findDoc(all[0]!), segment.findDoc(all[1]!)]);
    expect(idsOf(segment, segmentMatches(segment, q, 0, segment.docCount, deleted))).toEqual(all.slice(2));
  });
});

describe('Function: planMerges', () => {
  const level = (n: number, lvl: number, prefix = 's') =>
    Array.from({ length: n }, (_, i) => ({ id: `${prefix}${lvl}-${i}`, level: lvl, docs: 8 ** lvl, deleted: 0 }));

  it('makes pending documents a level-0 segment while the level has room', () => {
    const steps = planMerges(level(3, 0), true);
    expect(steps).toEqual([{ sources: [{ pending: true }], level: 0 }]);
    expect(finalSteps(steps)).toEqual([0]);
  });

  it('merges a full level into the next one, cascading', () => {
    // Prepare: level 0 one short of full, level 1 one short of full.
    const steps = planMerges([...level(MERGE_FACTOR - 1, 0), ...level(MERGE_FACTOR - 1, 1)], true);
    expect(steps).toHaveLength(2);
    expect(steps[0]!.level).toBe(1);
    expect(steps[0]!.sources).toHaveLength(MERGE_FACTOR);
    expect(steps[0]!.sources).toContainEqual({ pending: true });
    expect(steps[1]!.level).toBe(2);
    expect(steps[1]!.sources).toContainEqual({ step: 0 });
    expect(steps[1]!.sources).toHaveLength(MERGE_FACTOR);
    expect(finalSteps(steps)).toEqual([1]);
  });

  it('plans nothing for a settled index, and rewrites a segment with many deleted documents', () => {
    expect(planMerges([...level(7, 0), ...level(7, 1)], false)).toEqual([]);
    const segments = [...level(2, 2), { id: 'worn', level: 2, docs: 64, deleted: 13 }];
    expect(planMerges(segments, false)).toEqual([{ sources: [{ segment: 'worn' }], level: 2 }]);
  });
});

describe('Function: ByteLru', () => {
  it('evicts the least recently used values past its byte budget, and loads a key once', async () => {
    const cache = new ByteLru<string>(10, (v) => v.length);
    cache.set('a', 'aaaa');
    cache.set('b', 'bbbb');
    expect(cache.peek('a')).toBe('aaaa');
    cache.set('c', 'cccc');
    expect(cache.peek('b')).toBeUndefined();
    expect(cache.peek('a')).toBe('aaaa');
    let loads = 0;
    const load = async () => {
      loads++;
      return 'dd';
    };
    const [x, y] = await Promise.all([cache.get('d', load), cache.get('d', load)]);
    expect([x, y, loads]).toEqual(['dd', 'dd', 1]);
    expect(cache.bytes).toBeLessThanOrEqual(10);
  });
});

describe('Class: SearchIndex (a query over segments and unmerged entries)', () => {
  it('merges segments and entries newest first, once each, without tombstoned or deleted documents', async () => {
    // Prepare: two segments, entries (one already in a segment: merged within the commit margin), a tombstone, a deleted doc.
    const { SearchIndex, decodeDocSet, encodeDocSet } = await import('#shared/mailbox/search-index');
    const older = makeDocs(150, 40, 1_700_000_000_000);
    const newer = makeDocs(60, 41, 1_700_001_000_000);
    const loose = makeDocs(20, 42, 1_700_002_000_000);
    const segs = [older, newer].map((docs) => new Segment(encodeSegment(docs)));
    const deletedDoc = segs[0]!.postings('t:budget')[3]!;
    const parts = segs.map((segment, i) => ({
      id: `s${i}`,
      meta: {
        docs: segment.docCount,
        bytes: segment.bytes.length,
        level: 0,
        newest: segment.idAt(0),
        oldest: segment.idAt(segment.docCount - 1),
      },
      segment,
      deleted: i === 0 ? new Set([deletedDoc]) : new Set<number>(),
    }));
    const tombstoned = newer.find((d) => d.tokens.includes('t:budget'))!.id;
    const entries = new Map([...loose, newer[0]!].map((d) => [d.id, new Set(d.tokens)] as const));
    const index = new SearchIndex(parts, entries, new Set([tombstoned]));
    const q: TokenQuery = { all: [['t:budget']], none: [] };
    const live = [...older, ...newer, ...loose].filter(
      (d) => d.id !== tombstoned && d.id !== segs[0]!.idAt(deletedDoc),
    );

    // Act
    const all = index.matching(q, {}, 10_000);

    // Assess
    expect(all).toEqual({ ids: expected(live, q), more: false, unsure: new Set() });
    const page = index.matching(q, { before: all.ids[10], after: all.ids[40] }, 20);
    expect(page).toEqual({ ids: all.ids.slice(11, 31), more: true, unsure: new Set() });
    for (const d of [...older, ...newer, ...loose]) expect(index.matches(d.id, q), d.id).toBe(all.ids.includes(d.id));
    expect(index.matches(newId('message'), { all: [], none: ['t:zebra'] })).toBe(false);
    // Deleted doc numbers survive their encoding in the manifest.
    expect([...decodeDocSet(encodeDocSet(new Set([0, 1, 127, 128, 300_000, 5])))].sort((a, b) => a - b)).toEqual([
      0, 1, 5, 127, 128, 300_000,
    ]);
  });

  it('answers one-character words exactly for format-2 documents, and "unsure" for format-1 ones that match the rest', async () => {
    // Prepare: "invoice 7", "invoice 8" and "invoice 17" in both formats (format 1 held no one-character word), in a segment and as entries.
    const { SearchIndex } = await import('#shared/mailbox/search-index');
    const { FORMAT_TOKEN } = await import('#shared/mailbox/postings');
    let at = 0;
    const doc = (format: 1 | 2, ...words: string[]) => ({
      id: newId('message', 1_700_000_000_000 + ++at * 1000) as string,
      tokens: [
        ...(format === 2 ? [FORMAT_TOKEN] : []),
        ...words.filter((w) => format === 2 || w.length > 1).map((w) => `s:${w}`),
      ],
    });
    const old7 = doc(1, 'invoice', '7');
    const old8 = doc(1, 'invoice', '8');
    const old17 = doc(1, 'invoice', '17');
    const new7 = doc(2, 'invoice', '7');
    const new8 = doc(2, 'invoice', '8');
    const new17 = doc(2, 'invoice', '17');
    const entryOld7 = doc(1, 'invoice', '7');
    const entryNew7 = doc(2, 'invoice', '7');
    const entryNew8 = doc(2, 'invoice', '8');
    const segment = new Segment(encodeSegment([old7, old8, old17, new7, new8, new17]));
    const part = {
      id: 's0',
      meta: { docs: 6, bytes: segment.bytes.length, level: 0, newest: segment.idAt(0), oldest: segment.idAt(5) },
      segment,
      deleted: new Set<number>(),
    };
    const index = new SearchIndex(
      [part],
      new Map([entryOld7, entryNew7, entryNew8].map((d) => [d.id, new Set(d.tokens)] as const)),
      new Set(),
    );
    const newestFirst = (...docs: { id: string }[]) =>
      docs
        .map((d) => d.id)
        .sort()
        .reverse();
    const older = [old7, old8, old17, entryOld7];

    // Act
    const seven = index.matching({ all: [['s:invoice'], ['s:7']], none: [] }, {}, 100);
    const onlySeven = index.matching({ all: [['s:7']], none: [] }, {}, 100);
    const notSeven = index.matching({ all: [['s:invoice']], none: ['s:7'] }, {}, 100);
    const plain = index.matching({ all: [['s:invoice']], none: [] }, {}, 100);

    // Assess: format 2 exactly; format 1 every document the rest of the query matches, each unsure.
    expect(seven).toEqual({
      ids: newestFirst(new7, entryNew7, ...older),
      more: false,
      unsure: new Set(older.map((d) => d.id)),
    });
    expect(onlySeven).toEqual(seven);
    expect(notSeven).toEqual({
      ids: newestFirst(new8, new17, entryNew8, ...older),
      more: false,
      unsure: new Set(older.map((d) => d.id)),
    });
    // A query without a one-character word answers both formats alike, and is sure.
    expect(plain).toEqual({
      ids: newestFirst(old7, old8, old17, new7, new8, new17, entryOld7, entryNew7, entryNew8),
      more: false,
      unsure: new Set(),
    });
    const q = { all: [['s:invoice'], ['s:7']], none: [] };
    expect([old7, old8, entryOld7, new7, new8, entryNew7, entryNew8].map((d) => index.matches(d.id, q))).toEqual([
      'unsure',
      'unsure',
      'unsure',
      true,
      false,
      true,
      false,
    ]);
    // A format-1 document that misses another word is no match, not unsure.
    expect(index.matches(old8.id, { all: [['s:invoice'], ['s:zebra'], ['s:7']], none: [] })).toBe(false);
  });
});
