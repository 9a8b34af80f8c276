import { randomBytes } from 'node:crypto';
import { deleteBlobs, getBlob, putBlob } from '#shared/aws/mail-bucket';
import {
  COMMIT_MARGIN_MS,
  MergeConflictError,
  commitMerge,
  entrySequence,
  getSearchManifest,
  readSearchEntries,
  sequenceBefore,
  takeMergeLease,
  type SearchEntry,
  type SearchManifest,
  type SegmentMeta,
} from '#shared/db/search';
import { getGrant } from '#shared/db/grants';
import { FORMAT_TOKEN, format1Split } from '#shared/mailbox/postings';
import type { ApplicationId, GrantId, MessageId, ThreadId } from '#shared/ids';
import { refreshBatchThreads, refreshThreadFor } from '#shared/mailbox/thread-refresh';
import type { Job } from '#shared/jobs/job';
import { logger } from '#shared/logger';
import { ByteLru } from '#shared/search/cache';
import { docMatches, segmentMatches, tokensMatch, type TokenQuery } from '#shared/search/plan';
import { Segment, mergeSegments } from '#shared/search/segment';
import { finalSteps, planMerges, type MergeStep } from '#shared/search/tiers';
import { clock } from '#shared/time';

/**
 * The search index of an Agent Account mailbox, built like a log-structured engine (Lucene,
 * tantivy). Storing a message writes one search entry with its tokens, in the message's own
 * transaction (shared/db/search.ts): it is searchable at once, since queries read the entries not
 * yet merged. Merges (the jobs worker, after each stored message) fold those entries into immutable
 * segments in S3 (shared/search/segment.ts), tiered (shared/search/tiers.ts), and publish them with
 * one conditional write of the mailbox's manifest. Queries combine the live segments, cached per
 * container by ID since they never change, with the entries above the manifest's watermark.
 *
 * Deletes write a tombstone entry; merges record the deleted doc numbers per segment in the
 * manifest and drop them when they rewrite the segment. Replaced segment objects are removed by a
 * later merge, GC_DELAY_MS after they left the manifest (long after any query that could still read
 * them has answered).
 */
const CACHE_BYTES = Number(process.env.SEARCH_CACHE_MB ?? 96) * 1024 * 1024;
const LEASE_MS = 60_000;
const GC_DELAY_MS = 15 * 60_000;
/** Loose documents from which a merge takes the lease first, so that a burst of jobs builds one segment, not one each. */
const LEASED_MERGE_MIN = 8;
/**
 * Unmerged entries below which the message-stored job leaves them for a later one (the memtable of a
 * log-structured engine): queries read them from one partition anyway, and a mailbox receiving mail
 * one message at a time then writes its manifest once per this many messages, not once per message.
 * Deletes (tombstones) and due tiered merges are never deferred.
 */
export const DEFERRED_MERGE_MAX = 16;
/**
 * The same for the batches a first sync brings in (history, stored quietly): a merge reads every
 * entry above the watermark, which trails the newest by COMMIT_MARGIN_MS, so during an import each
 * merge re-reads what the import stored in the last minutes; merging every few batches rather than
 * every batch divides that by as much. The sync's end commits a merge-search job for what is left.
 */
export const IMPORT_MERGE_MAX = 512;
/** Merged entries above the watermark from which a merge with nothing else to do still moves it up. */
const WATERMARK_ADVANCE_MIN = 64;
const MAX_ROUNDS = 20;

const segments = new ByteLru<Segment>(CACHE_BYTES, (s) => s.bytes.length + 1024);

/**
 * Where a mailbox's segments live: beside its contents rather than under them (`grants/<id>/` holds
 * what its messages and drafts reference), removed with the grant all the same.
 */
export const searchPrefix = (grantId: GrantId) => `search/${grantId}/`;
export const segmentObjectKey = (grantId: GrantId, segmentId: string) => `${searchPrefix(grantId)}${segmentId}`;

/** A segment by ID (from the container's cache, or S3: segments never change under their ID). */
export async function loadSegment(grantId: GrantId, segmentId: string): Promise<Segment> {
  return segments.get(
    `${grantId}/${segmentId}`,
    async () => new Segment(await getBlob(segmentObjectKey(grantId, segmentId))),
  );
}

/** Writes a new segment object and returns its ID (a ULID body: names sort by creation). */
export async function writeSegmentObject(grantId: GrantId, bytes: Buffer): Promise<{ id: string; segment: Segment }> {
  const id = entrySequence();
  const segment = new Segment(bytes);
  await putBlob(segmentObjectKey(grantId, id), bytes, 'application/octet-stream');
  segments.set(`${grantId}/${id}`, segment);
  return { id, segment };
}

/** The manifest entry of a segment. */
export function segmentMeta(segment: Segment, level: number, deleted?: ReadonlySet<number>): SegmentMeta {
  return {
    docs: segment.docCount,
    bytes: segment.bytes.length,
    level,
    newest: segment.docCount ? segment.idAt(0) : '',
    oldest: segment.docCount ? segment.idAt(segment.docCount - 1) : '',
    ...(deleted?.size ? { deleted: encodeDocSet(deleted) } : {}),
  };
}

/** Deleted doc numbers as delta-encoded varints (an attribute of the manifest). */
export function encodeDocSet(docs: ReadonlySet<number>): Uint8Array {
  const sorted = [...docs].sort((a, b) => a - b);
  const out: number[] = [];
  let previous = 0;
  for (const n of sorted) {
    let v = n - previous;
    previous = n;
    while (v >= 0x80) {
      out.push((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out.push(v);
  }
  return Uint8Array.from(out);
}

export function decodeDocSet(bytes: Uint8Array | undefined): Set<number> {
  const out = new Set<number>();
  if (!bytes) return out;
  let value = 0;
  let shift = 0;
  let previous = 0;
  for (const byte of bytes) {
    value |= (byte & 0x7f) << shift;
    if (byte & 0x80) {
      shift += 7;
      continue;
    }
    previous += value >>> 0;
    out.add(previous);
    value = 0;
    shift = 0;
  }
  return out;
}

interface Part {
  id: string;
  meta: SegmentMeta;
  segment: Segment;
  deleted: Set<number>;
}

const inRange = (id: string, meta: SegmentMeta) => meta.docs > 0 && id >= meta.oldest && id <= meta.newest;

/** The entries above the watermark, split: the tokens of stored messages, and deleted messages. */
function readEntries(entries: readonly SearchEntry[]) {
  const tombstoned = new Set(entries.filter((e) => e.deleted).map((e) => e.messageId as string));
  const loose = new Map<string, Set<string>>();
  for (const e of entries) if (!e.deleted && !tombstoned.has(e.messageId)) loose.set(e.messageId, new Set(e.tokens));
  return { loose, tombstoned };
}

/**
 * What the index says of a message for a query: whether it matches, or, for a message indexed
 * before one-character words were (see SearchIndex), 'unsure': it matches every part of the query
 * its tokens know, and its one-character words are to be decided on the message itself.
 */
export type IndexAnswer = boolean | 'unsure';

/**
 * The answer for one document, given how to match its tokens against a query and whether it holds
 * FORMAT_TOKEN. `split` is format1Split of the query (undefined: no one-character word in it).
 */
function answerFor(
  matches: (q: TokenQuery) => boolean,
  format2: boolean,
  q: TokenQuery,
  split: ReturnType<typeof format1Split>,
): IndexAnswer {
  if (!split || format2) return matches(q);
  return matches(split.known) && 'unsure';
}

const FORMAT_2: TokenQuery = { all: [[FORMAT_TOKEN]], none: [] };

/**
 * A mailbox's index as one query sees it: the live segments (less their deleted documents), the
 * entries not merged yet, and the messages deleted since the last merge.
 *
 * Whole keywords of one character ("Invoice 7") are indexed since format 2: every document indexed
 * since holds FORMAT_TOKEN, and documents indexed before hold no one-character word. Those older
 * documents are answered by a tolerant query rather than a reindex job: a reindex would read every
 * message body of every mailbox back from S3 and rewrite every segment, and until it finished (or
 * for a mailbox it had not reached) queries would still answer wrongly. Here a query without a
 * one-character word runs as it always did, on documents of either format. A query with one runs
 * exactly on format-2 documents (the query and FORMAT_TOKEN), and on format-1 documents with only
 * the part their tokens know; those matches come back 'unsure', and the caller decides the
 * one-character words on the message itself (shared/mailbox/query.ts), so that no older message is
 * wrongly excluded or included by one. Nothing is ever rewritten: the cost stays with queries that
 * have such a word, in mailboxes that still hold older documents.
 */
export class SearchIndex {
  constructor(
    private readonly parts: readonly Part[],
    private readonly loose: ReadonlyMap<string, ReadonlySet<string>>,
    private readonly tombstoned: ReadonlySet<string>,
  ) {}

  /** Entries read above the watermark (how much a query paid for unmerged entries). */
  get pendingEntries(): number {
    return this.loose.size + this.tombstoned.size;
  }

  get segmentCount(): number {
    return this.parts.length;
  }

  /**
   * Message IDs matching `q` (at least one required group), newest first, strictly between
   * `range.after` and `range.before`: at most `max`, whether more follow, and which of them are
   * 'unsure' (format-1 documents, see the class).
   */
  matching(
    q: TokenQuery,
    range: { after?: string; before?: string },
    max: number,
  ): { ids: string[]; more: boolean; unsure: ReadonlySet<string> } {
    const inside = (id: string) =>
      (range.before === undefined || id < range.before) && (range.after === undefined || id > range.after);
    const split = format1Split(q);
    const exact: TokenQuery = split ? { all: [...q.all, [FORMAT_TOKEN]], none: q.none } : q;
    // Format-1 documents matching what they know (without a required group left, every one of the range).
    const older: TokenQuery | undefined = split && { all: split.known.all, none: [...split.known.none, FORMAT_TOKEN] };
    const sources: { next: () => string | undefined; head: string | undefined; unsure: boolean }[] = [];
    const add = (segment: Segment, docs: Uint32Array, unsure: boolean) => {
      if (!docs.length) return;
      let i = 0;
      const next = () => (i < docs.length ? segment.idAt(docs[i++]!) : undefined);
      sources.push({ next, head: next(), unsure });
    };
    for (const part of this.parts) {
      if (range.before !== undefined && part.meta.oldest >= range.before) continue;
      if (range.after !== undefined && part.meta.newest <= range.after) continue;
      const [lo, hi] = part.segment.docRange(range);
      add(part.segment, segmentMatches(part.segment, exact, lo, hi, part.deleted), false);
      if (older && part.segment.postings(FORMAT_TOKEN).length < part.segment.docCount)
        add(part.segment, segmentMatches(part.segment, older, lo, hi, part.deleted), true);
    }
    const loose: string[] = [];
    const looseUnsure = new Set<string>();
    for (const [id, tokens] of this.loose) {
      if (!inside(id)) continue;
      const answer = answerFor((x) => tokensMatch(tokens, x), tokens.has(FORMAT_TOKEN), q, split);
      if (!answer) continue;
      loose.push(id);
      if (answer === 'unsure') looseUnsure.add(id);
    }
    loose.sort().reverse();
    let l = 0;
    const nextLoose = () => loose[l++];
    sources.push({ next: nextLoose, head: nextLoose(), unsure: false });
    const ids: string[] = [];
    const unsure = new Set<string>();
    let last: string | undefined;
    for (;;) {
      let best: (typeof sources)[number] | undefined;
      for (const s of sources) if (s.head !== undefined && (!best || s.head > best.head!)) best = s;
      if (!best) return { ids, more: false, unsure };
      const id = best.head!;
      best.head = best.next();
      // An entry merged within the commit margin is read from its segment too: once.
      if (id === last || this.tombstoned.has(id)) continue;
      if (ids.length === max) return { ids, more: true, unsure };
      ids.push(id);
      if (best.unsure || looseUnsure.has(id)) unsure.add(id);
      last = id;
    }
  }

  /** What the index says of message `id` for `q` (false for a message the index does not hold). */
  matches(id: string, q: TokenQuery): IndexAnswer {
    if (this.tombstoned.has(id)) return false;
    const split = format1Split(q);
    const tokens = this.loose.get(id);
    if (tokens) return answerFor((x) => tokensMatch(tokens, x), tokens.has(FORMAT_TOKEN), q, split);
    for (const part of this.parts) {
      if (!inRange(id, part.meta)) continue;
      const n = part.segment.findDoc(id);
      if (n >= 0 && !part.deleted.has(n))
        return answerFor((x) => docMatches(part.segment, n, x), docMatches(part.segment, n, FORMAT_2), q, split);
    }
    return false;
  }
}

async function partsOf(
  grantId: GrantId,
  manifest: SearchManifest,
  wanted: (id: string, meta: SegmentMeta) => boolean = () => true,
): Promise<Part[]> {
  return Promise.all(
    Object.entries(manifest.segments)
      .filter(([id, meta]) => wanted(id, meta))
      .map(async ([id, meta]) => ({
        id,
        meta,
        segment: await loadSegment(grantId, id),
        deleted: decodeDocSet(meta.deleted),
      })),
  );
}

/** Reads the mailbox's index for one query: the manifest, the entries above its watermark, the live segments. */
export async function openSearchIndex(grantId: GrantId): Promise<SearchIndex> {
  const manifest = await getSearchManifest(grantId);
  const [entries, parts] = await Promise.all([
    readSearchEntries(grantId, manifest.watermark),
    partsOf(grantId, manifest),
  ]);
  const { loose, tombstoned } = readEntries(entries);
  return new SearchIndex(parts, loose, tombstoned);
}

export type MergeOutcome =
  | { outcome: 'merged'; rounds: number; docs: number; segments: number }
  | { outcome: 'nothing' | 'busy' | 'out-of-time'; rounds: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Folds the mailbox's unmerged entries into its segments and runs the tiered merges they make due.
 * Idempotent, and safe to run concurrently: a merge publishes with a write conditional on the
 * manifest version it read (and on its lease, when it took one); the loser deletes what it wrote
 * and looks again. A merge that held the lease looks again after releasing it, so entries committed
 * while it worked (whose jobs found the lease taken and left) are merged too. With `wait`, a lease
 * held by another merge is waited for (until it ends or expires) rather than left to its holder.
 */
export async function mergeSearchIndex(
  grantId: GrantId,
  options: { wait?: boolean; outOfTime?: () => boolean; deferBelow?: number } = {},
): Promise<MergeOutcome> {
  const owner = randomBytes(8).toString('hex');
  const waitUntil = clock.nowMs() + LEASE_MS + 5000;
  let holding = false;
  let merged: Extract<MergeOutcome, { outcome: 'merged' }> | undefined;
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    if (options.outOfTime?.()) return merged ?? { outcome: 'out-of-time', rounds: round };
    const snapshotAt = clock.nowMs();
    const manifest = await getSearchManifest(grantId);
    if (manifest.lease && manifest.lease !== owner && (manifest.lease_until ?? 0) >= snapshotAt) {
      if (!options.wait || snapshotAt > waitUntil) return merged ?? { outcome: 'busy', rounds: round };
      await sleep(Math.min(500, (manifest.lease_until ?? snapshotAt) - snapshotAt + 10));
      round--;
      continue;
    }
    holding = manifest.lease === owner;
    const entries = await readSearchEntries(grantId, manifest.watermark);
    const { loose, tombstoned } = readEntries(entries);
    // Only the segments that may hold an entry's message are read to tell merged entries from new ones.
    const ids = [...loose.keys(), ...tombstoned];
    const touched = await partsOf(grantId, manifest, (_, meta) => ids.some((id) => inRange(id, meta)));
    const newDeletes = new Map<string, Set<number>>();
    for (const part of touched) {
      for (const id of ids) {
        if (!inRange(id, part.meta)) continue;
        const n = part.segment.findDoc(id);
        if (n < 0) continue;
        loose.delete(id);
        if (tombstoned.has(id) && !part.deleted.has(n))
          newDeletes.set(part.id, (newDeletes.get(part.id) ?? new Set()).add(n));
      }
    }
    const deletedOf = (id: string) =>
      new Set([...decodeDocSet(manifest.segments[id]!.deleted), ...(newDeletes.get(id) ?? [])]);
    const steps = planMerges(
      Object.entries(manifest.segments).map(([id, meta]) => ({
        id,
        level: meta.level,
        docs: meta.docs,
        deleted: deletedOf(id).size,
      })),
      loose.size > 0,
    );
    const watermark = [manifest.watermark, sequenceBefore(snapshotAt - COMMIT_MARGIN_MS)].sort().at(-1)!;
    const belowNewWatermark = entries.filter((e) => e.sequence <= watermark).length;
    const deferred =
      options.deferBelow !== undefined &&
      loose.size < options.deferBelow &&
      !tombstoned.size &&
      !newDeletes.size &&
      !steps.some((s) => s.sources.some((src) => 'segment' in src));
    if (deferred || (!steps.length && !newDeletes.size && belowNewWatermark < WATERMARK_ADVANCE_MIN)) {
      if (holding)
        await commitMerge(grantId, manifest.version, owner, {
          segments: manifest.segments,
          watermark,
          garbage: manifest.garbage,
        });
      return merged ?? { outcome: 'nothing', rounds: round };
    }
    if (!holding && (loose.size >= LEASED_MERGE_MIN || steps.some((s) => s.sources.some((src) => 'segment' in src)))) {
      // Heavier work: one merge at a time (the others leave, or wait), then read again under the lease.
      if (!(await takeMergeLease(grantId, owner, clock.nowMs() + LEASE_MS))) {
        if (!options.wait) return merged ?? { outcome: 'busy', rounds: round };
        await sleep(200);
      }
      continue;
    }
    const written = await runSteps(grantId, manifest, steps, loose, tombstoned);
    const next = { ...manifest.segments };
    for (const step of written.consumed) delete next[step];
    for (const id of newDeletes.keys()) if (next[id]) next[id] = { ...next[id]!, deleted: encodeDocSet(deletedOf(id)) };
    for (const out of written.outputs) next[out.id] = out.meta;
    // Objects replaced long enough ago that no query can still be reading them: removed now.
    const now = clock.nowMs();
    const expired = Object.entries(manifest.garbage)
      .filter(([, at]) => now - at >= GC_DELAY_MS)
      .map(([id]) => id);
    if (expired.length) await deleteBlobs(expired.map((id) => segmentObjectKey(grantId, id)));
    const garbage = Object.fromEntries([
      ...Object.entries(manifest.garbage).filter(([id]) => !expired.includes(id)),
      ...written.consumed.map((id) => [id, now] as const),
    ]);
    try {
      await commitMerge(grantId, manifest.version, holding ? owner : undefined, { segments: next, watermark, garbage });
    } catch (error) {
      if (!(error instanceof MergeConflictError)) throw error;
      // Another merge published first: what this one wrote is referenced by nothing.
      await deleteBlobs(written.outputs.map((o) => segmentObjectKey(grantId, o.id)));
      holding = false;
      continue;
    }
    const docs = written.outputs.reduce((n, o) => n + o.meta.docs, 0);
    merged = { outcome: 'merged', rounds: round, docs: (merged?.docs ?? 0) + docs, segments: written.outputs.length };
    logger.debug('search merge', {
      grant_id: grantId,
      loose: loose.size,
      deletes: newDeletes.size,
      steps: steps.length,
      outputs: written.outputs.length,
      docs,
    });
    // The lease was released by the commit: look again for entries whose jobs left while it was held.
    if (!holding) return merged;
    holding = false;
  }
  return merged ?? { outcome: 'busy', rounds: MAX_ROUNDS };
}

/** Runs merge steps in memory and writes their final outputs; returns what they replace and add. */
async function runSteps(
  grantId: GrantId,
  manifest: SearchManifest,
  steps: readonly MergeStep[],
  loose: ReadonlyMap<string, ReadonlySet<string>>,
  tombstoned: ReadonlySet<string>,
) {
  const outputs: Segment[] = [];
  const consumed: string[] = [];
  for (const step of steps) {
    const inputs: { segment: Segment; deleted?: ReadonlySet<number> }[] = [];
    let withLoose = false;
    for (const source of step.sources) {
      if ('pending' in source) withLoose = true;
      else if ('step' in source) inputs.push({ segment: outputs[source.step]! });
      else {
        consumed.push(source.segment);
        inputs.push({
          segment: await loadSegment(grantId, source.segment),
          deleted: decodeDocSet(manifest.segments[source.segment]!.deleted),
        });
      }
    }
    const looseDocs = withLoose ? [...loose].map(([id, tokens]) => ({ id, tokens })) : [];
    outputs.push(new Segment(mergeSegments(inputs, looseDocs, tombstoned)));
  }
  const finals = finalSteps(steps).filter((i) => outputs[i]!.docCount > 0);
  const written = await Promise.all(
    finals.map(async (i) => {
      const { id, segment } = await writeSegmentObject(grantId, outputs[i]!.bytes);
      return { id, meta: segmentMeta(segment, steps[i]!.level) };
    }),
  );
  return { consumed, outputs: written };
}

/** The merge-search job: a merge of one mailbox's index (nothing for a grant deleted since). */
export async function runMergeSearchJob(
  job: Extract<Job, { kind: 'merge-search' }>,
  outOfTime: () => boolean,
): Promise<MergeOutcome | undefined> {
  if (!(await getGrant(job.application_id as ApplicationId, job.grant_id as GrantId))) return undefined;
  const outcome = await mergeSearchIndex(job.grant_id as GrantId, { wait: true, outOfTime });
  logger.info('merge-search', { grant_id: job.grant_id, ...outcome });
  return outcome;
}

/**
 * The message-stored job: the thread, then the search merge once DEFERRED_MERGE_MAX entries wait
 * (waiting for a merge under way rather than leaving, so that no entry is left behind by a merge
 * that dies).
 */
export async function runMessageStoredJob(
  job: Extract<Job, { kind: 'message-stored' }>,
  outOfTime: () => boolean,
): Promise<void> {
  if (!(await getGrant(job.application_id as ApplicationId, job.grant_id as GrantId))) return;
  await refreshThreadFor(job.grant_id as GrantId, job.thread_id as ThreadId, job.message_id as MessageId);
  await mergeSearchIndex(job.grant_id as GrantId, { wait: true, outOfTime, deferBelow: DEFERRED_MERGE_MAX });
}

/** The messages-stored job: the threads of a batch stored together, then one merge of the mailbox's search entries (in larger steps for an import's batch). */
export async function runMessagesStoredJob(
  job: Extract<Job, { kind: 'messages-stored' }>,
  outOfTime: () => boolean,
): Promise<void> {
  if (!(await getGrant(job.application_id as ApplicationId, job.grant_id as GrantId))) return;
  await refreshBatchThreads(
    job.grant_id as GrantId,
    job.thread_ids as ThreadId[],
    (job.message_ids ?? []) as MessageId[],
  );
  await mergeSearchIndex(job.grant_id as GrantId, {
    wait: true,
    outOfTime,
    deferBelow: job.import ? IMPORT_MERGE_MAX : DEFERRED_MERGE_MAX,
  });
}
