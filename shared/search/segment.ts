/**
 * Immutable search segments: the on-disk format of a mailbox's search index, built like a Lucene or
 * tantivy segment. A segment maps tokens to the messages holding them; it is written once (to S3),
 * never changed, and replaced as a whole when merges fold it into a larger one.
 *
 * Layout (little-endian):
 *
 * | bytes            | what                                                                  |
 * |------------------|-----------------------------------------------------------------------|
 * | 4                | magic `SBS1`                                                          |
 * | 4                | docs: number of documents                                            |
 * | 4                | tokens: number of distinct tokens                                    |
 * | 4                | dictionary bytes                                                      |
 * | 4                | postings bytes                                                        |
 * | docs × 26        | doc table: message ID bodies (the ULID after `msg_`), newest first    |
 * | tokens × 4       | offset of each token's dictionary entry (tokens sorted by UTF-8 bytes)|
 * | dictionary bytes | per token: varint length, UTF-8 bytes, varint count, varint offset    |
 * | postings bytes   | per token: ascending doc numbers, delta-encoded varints               |
 *
 * A document's number is its position in the doc table: numbers ascend as IDs descend, so a
 * posting list read in order is newest first, and an ID range is a doc number range.
 */
export const MESSAGE_PREFIX = 'msg_';
const ID_BYTES = 26;
const HEADER_BYTES = 20;
const MAGIC = 0x31534253; // 'SBS1' read as a little-endian u32
const ID_BODY = /^[0-9a-z]{26}$/;

export class SegmentFormatError extends Error {
  constructor(message: string) {
    super(`Search segment: ${message}`);
    this.name = 'SegmentFormatError';
  }
}

/** A growable byte buffer with varint writes. */
class ByteWriter {
  private buf = Buffer.allocUnsafe(1024);
  length = 0;

  private room(n: number) {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  varint(value: number) {
    this.room(5);
    let v = value >>> 0;
    while (v >= 0x80) {
      this.buf[this.length++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.length++] = v;
  }

  bytes(data: Uint8Array) {
    this.room(data.length);
    this.buf.set(data, this.length);
    this.length += data.length;
  }

  result(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/** Reads one varint at `offset`; returns [value, next offset]. */
function readVarint(buf: Uint8Array, offset: number): [number, number] {
  let value = 0;
  let shift = 0;
  let i = offset;
  for (;;) {
    const byte = buf[i++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, i];
    shift += 7;
  }
}

/** One token and its documents (ascending numbers), as a segment writer takes them. */
export interface TokenPostings {
  token: Buffer;
  docs: ArrayLike<number>;
}

/**
 * Writes a segment: `ids` newest first (descending, distinct), `tokens` sorted by their bytes, each
 * with ascending doc numbers (positions in `ids`).
 */
export function writeSegment(ids: readonly string[], tokens: Iterable<TokenPostings>): Buffer {
  const docTable = Buffer.allocUnsafe(ids.length * ID_BYTES);
  let previous: string | undefined;
  ids.forEach((id, i) => {
    const body = id.startsWith(MESSAGE_PREFIX) ? id.slice(MESSAGE_PREFIX.length) : '';
    if (!ID_BODY.test(body)) throw new SegmentFormatError(`'${id}' is not a message ID`);
    if (previous !== undefined && !(id < previous))
      throw new SegmentFormatError('documents must be distinct and newest first');
    previous = id;
    docTable.write(body, i * ID_BYTES, 'latin1');
  });
  const dictionary = new ByteWriter();
  const postings = new ByteWriter();
  const offsets: number[] = [];
  let last: Buffer | undefined;
  for (const { token, docs } of tokens) {
    if (last && Buffer.compare(last, token) >= 0) throw new SegmentFormatError('tokens must be distinct and sorted');
    last = token;
    offsets.push(dictionary.length);
    dictionary.varint(token.length);
    dictionary.bytes(token);
    dictionary.varint(docs.length);
    dictionary.varint(postings.length);
    let prev = -1;
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i]!;
      if (doc <= prev || doc >= ids.length)
        throw new SegmentFormatError('doc numbers must ascend within the doc table');
      postings.varint(prev < 0 ? doc : doc - prev);
      prev = doc;
    }
  }
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(MAGIC, 0);
  header.writeUInt32LE(ids.length, 4);
  header.writeUInt32LE(offsets.length, 8);
  header.writeUInt32LE(dictionary.length, 12);
  header.writeUInt32LE(postings.length, 16);
  const offsetTable = Buffer.allocUnsafe(offsets.length * 4);
  offsets.forEach((o, i) => offsetTable.writeUInt32LE(o, i * 4));
  return Buffer.concat([header, docTable, offsetTable, dictionary.result(), postings.result()]);
}

const encoder = new TextEncoder();
export const tokenBytes = (token: string) => Buffer.from(encoder.encode(token));

/** A segment of documents given with their tokens (the level-0 segment of pending entries, tests). */
export function encodeSegment(docs: readonly { id: string; tokens: Iterable<string> }[]): Buffer {
  const ordered = [...new Map(docs.map((d) => [d.id, d])).values()].sort((a, b) =>
    a.id < b.id ? 1 : a.id > b.id ? -1 : 0,
  );
  const byToken = new Map<string, number[]>();
  ordered.forEach((doc, n) => {
    for (const token of new Set(doc.tokens)) {
      const list = byToken.get(token);
      if (list) list.push(n);
      else byToken.set(token, [n]);
    }
  });
  const tokens = [...byToken]
    .map(([token, list]) => ({ token: tokenBytes(token), docs: list }))
    .sort((a, b) => Buffer.compare(a.token, b.token));
  return writeSegment(
    ordered.map((d) => d.id),
    tokens,
  );
}

/** Sorted doc numbers of one token, decoded once per segment (see Segment.postings). */
const POSTINGS_CACHE_ENTRIES = 256;

/**
 * A decoded segment: reads straight from the object's bytes (nothing is unpacked up front), so
 * opening one costs a header read and lookups cost a binary search.
 */
export class Segment {
  readonly docCount: number;
  readonly tokenCount: number;
  private readonly docsAt: number;
  private readonly offsetsAt: number;
  private readonly dictionaryAt: number;
  private readonly postingsStart: number;
  private readonly cache = new Map<string, Uint32Array>();

  constructor(readonly bytes: Buffer) {
    if (bytes.length < HEADER_BYTES || bytes.readUInt32LE(0) !== MAGIC)
      throw new SegmentFormatError('not a segment (bad magic)');
    this.docCount = bytes.readUInt32LE(4);
    this.tokenCount = bytes.readUInt32LE(8);
    const dictionaryBytes = bytes.readUInt32LE(12);
    const postingsBytes = bytes.readUInt32LE(16);
    this.docsAt = HEADER_BYTES;
    this.offsetsAt = this.docsAt + this.docCount * ID_BYTES;
    this.dictionaryAt = this.offsetsAt + this.tokenCount * 4;
    this.postingsStart = this.dictionaryAt + dictionaryBytes;
    if (this.postingsStart + postingsBytes !== bytes.length)
      throw new SegmentFormatError(
        `truncated or padded (${bytes.length} bytes, ${this.postingsStart + postingsBytes} expected)`,
      );
  }

  /** Message ID of doc `n`. */
  idAt(n: number): string {
    const at = this.docsAt + n * ID_BYTES;
    return MESSAGE_PREFIX + this.bytes.toString('latin1', at, at + ID_BYTES);
  }

  /** Compares doc `n`'s ID body with `body` (26 characters): negative when doc n's ID is smaller. */
  private compareDoc(n: number, body: Buffer): number {
    const at = this.docsAt + n * ID_BYTES;
    return this.bytes.compare(body, 0, ID_BYTES, at, at + ID_BYTES);
  }

  /** Doc numbers of IDs strictly between `after` and `before` (either may be absent): `[lo, hi)`. */
  docRange(range: { after?: string; before?: string }): [number, number] {
    // Doc numbers ascend as IDs descend: the first doc below `before` starts the range, the first doc
    // at or below `after` ends it.
    const lo = range.before === undefined ? 0 : this.firstDocBelow(range.before, false);
    const hi = range.after === undefined ? this.docCount : this.firstDocBelow(range.after, true);
    return [lo, Math.max(lo, hi)];
  }

  /** The first doc number whose ID is below `id` (or at or below it, with `inclusive`). */
  private firstDocBelow(id: string, inclusive: boolean): number {
    const body = Buffer.from(bodyOf(id).padEnd(ID_BYTES, '0').slice(0, ID_BYTES), 'latin1');
    // A bound that is not a full message ID (a prefix such as `msg_01j…` of a time) compares by its
    // characters: padding with '0' keeps every real ID at that prefix above it.
    let lo = 0;
    let hi = this.docCount;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.compareDoc(mid, body);
      if (c < 0 || (inclusive && c === 0)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** Doc number of a message ID, or -1. */
  findDoc(id: string): number {
    if (!id.startsWith(MESSAGE_PREFIX)) return -1;
    const n = this.firstDocBelow(id, true);
    return n < this.docCount && this.idAt(n) === id ? n : -1;
  }

  /** Index of `token` in the dictionary, or -1. */
  private findToken(token: Buffer): number {
    let lo = 0;
    let hi = this.tokenCount - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = Buffer.compare(this.tokenAt(mid), token);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The bytes of the i-th token of the dictionary (a view, not a copy). */
  tokenAt(i: number): Buffer {
    const at = this.dictionaryAt + this.bytes.readUInt32LE(this.offsetsAt + i * 4);
    const [length, start] = readVarint(this.bytes, at);
    return this.bytes.subarray(start, start + length);
  }

  /** Doc numbers of the i-th token, ascending. */
  postingsAt(i: number): Uint32Array {
    const at = this.dictionaryAt + this.bytes.readUInt32LE(this.offsetsAt + i * 4);
    let [length, next] = readVarint(this.bytes, at);
    next += length;
    let count: number;
    let offset: number;
    [count, next] = readVarint(this.bytes, next);
    [offset] = readVarint(this.bytes, next);
    const out = new Uint32Array(count);
    const buf = this.bytes;
    let position = this.postingsStart + offset;
    let doc = 0;
    for (let k = 0; k < count; k++) {
      // Doc numbers fit 32 bits: at most five varint bytes, decoded inline (this is the hot loop).
      let byte = buf[position++]!;
      let delta = byte & 0x7f;
      let shift = 7;
      while (byte >= 0x80) {
        byte = buf[position++]!;
        delta |= (byte & 0x7f) << shift;
        shift += 7;
      }
      doc = k === 0 ? delta >>> 0 : doc + (delta >>> 0);
      out[k] = doc;
    }
    return out;
  }

  /** Doc numbers holding `token`, ascending (empty when none). Decoded lists are kept for the next lookup. */
  postings(token: string): Uint32Array {
    const cached = this.cache.get(token);
    if (cached) return cached;
    const i = this.findToken(tokenBytes(token));
    const list = i < 0 ? EMPTY : this.postingsAt(i);
    if (this.cache.size >= POSTINGS_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(token, list);
    return list;
  }
}

const EMPTY = new Uint32Array(0);

const bodyOf = (id: string) =>
  id.startsWith(MESSAGE_PREFIX) ? id.slice(MESSAGE_PREFIX.length) : id.slice(id.indexOf('_') + 1);

/**
 * Merges segments and loose documents into one segment, dropping the documents `drop` names (deleted
 * messages) and those of `deleted` doc numbers per segment. Postings are merged list by list in
 * token order, never unpacked into per-document token sets, so a merge costs what it writes.
 */
export function mergeSegments(
  inputs: readonly { segment: Segment; deleted?: ReadonlySet<number> }[],
  loose: readonly { id: string; tokens: Iterable<string> }[],
  drop: ReadonlySet<string> = new Set(),
): Buffer {
  // The merged doc table: every live document once, newest first.
  const ids = new Set<string>();
  for (const { segment, deleted } of inputs) {
    for (let n = 0; n < segment.docCount; n++) {
      if (deleted?.has(n)) continue;
      const id = segment.idAt(n);
      if (!drop.has(id)) ids.add(id);
    }
  }
  const looseDocs = loose.filter((d) => !drop.has(d.id) && !ids.has(d.id));
  const looseIds = new Set<string>();
  const uniqueLoose = looseDocs.filter((d) => !looseIds.has(d.id) && looseIds.add(d.id));
  for (const d of uniqueLoose) ids.add(d.id);
  const ordered = [...ids].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  const position = new Map(ordered.map((id, n) => [id, n]));
  // Old doc number → new one (-1: dropped), per input; monotonic, so mapped lists stay ascending.
  const maps = inputs.map(({ segment }) => {
    const map = new Int32Array(segment.docCount);
    for (let n = 0; n < segment.docCount; n++) map[n] = position.get(segment.idAt(n)) ?? -1;
    return map;
  });
  // Loose documents as one more sorted source.
  const looseTokens = new Map<string, number[]>();
  for (const d of uniqueLoose) {
    const n = position.get(d.id)!;
    for (const token of new Set(d.tokens)) {
      const list = looseTokens.get(token);
      if (list) list.push(n);
      else looseTokens.set(token, [n]);
    }
  }
  const looseSorted = [...looseTokens]
    .map(([token, list]) => ({ token: tokenBytes(token), docs: list.sort((a, b) => a - b) }))
    .sort((a, b) => Buffer.compare(a.token, b.token));

  function* merged(): Generator<TokenPostings> {
    const cursors = inputs.map(() => 0);
    let looseAt = 0;
    for (;;) {
      let min: Buffer | undefined;
      inputs.forEach(({ segment }, s) => {
        if (cursors[s]! < segment.tokenCount) {
          const t = segment.tokenAt(cursors[s]!);
          if (!min || Buffer.compare(t, min) < 0) min = t;
        }
      });
      if (looseAt < looseSorted.length && (!min || Buffer.compare(looseSorted[looseAt]!.token, min) < 0))
        min = looseSorted[looseAt]!.token;
      if (!min) return;
      const token = Buffer.from(min);
      const lists: number[][] = [];
      inputs.forEach(({ segment }, s) => {
        if (cursors[s]! < segment.tokenCount && Buffer.compare(segment.tokenAt(cursors[s]!), token) === 0) {
          const map = maps[s]!;
          const mapped: number[] = [];
          for (const doc of segment.postingsAt(cursors[s]!)) {
            const n = map[doc]!;
            if (n >= 0) mapped.push(n);
          }
          if (mapped.length) lists.push(mapped);
          cursors[s]!++;
        }
      });
      if (looseAt < looseSorted.length && Buffer.compare(looseSorted[looseAt]!.token, token) === 0)
        lists.push(looseSorted[looseAt++]!.docs);
      if (!lists.length) continue;
      yield { token, docs: lists.length === 1 ? lists[0]! : mergeAscending(lists) };
    }
  }
  return writeSegment(ordered, merged());
}

/** Merges ascending lists of distinct numbers (distinct across lists too) into one ascending list. */
function mergeAscending(lists: number[][]): number[] {
  if (lists.length === 2) {
    const [a, b] = lists as [number[], number[]];
    const out = new Array<number>(a.length + b.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < a.length && j < b.length) out[k++] = a[i]! < b[j]! ? a[i++]! : b[j++]!;
    while (i < a.length) out[k++] = a[i++]!;
    while (j < b.length) out[k++] = b[j++]!;
    return out;
  }
  return lists.flat().sort((x, y) => x - y);
}
