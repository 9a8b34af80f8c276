import { createHash } from 'node:crypto';
import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import type { MailSyncRecord } from '#shared/db/mail-sync';
import { ProviderError } from '#shared/errors';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import type { NotificationType } from '#schemas/notifications';
import {
  graphClientOf,
  GraphGoneError,
  GraphNotFoundError,
  type GraphClient,
  type GraphPage,
} from '#shared/microsoft/client';
import {
  calendarFromGraph,
  eventFromGraph,
  eventIdOf,
  GRAPH_CALENDAR_SELECT,
  GRAPH_EVENT_SELECT,
  METADATA_EXPAND,
  zoneOfEvent,
  type GraphCalendar,
  type GraphEvent,
} from '#shared/microsoft/graph-event';
import { newNotification } from '#shared/notifications/notification';
import type { SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider B's calendar changes, announced, read by the grant's sync runs as provider A's are
 * (shared/google/calendar-changes.ts): nothing of the calendars is stored, the cursors are the state.
 *   - The calendar list, compared with the calendars (a hash of each as we answer it) the last run saw:
 *     `calendar.created` / `calendar.updated` / `calendar.deleted`.
 *   - Each calendar's events through Graph's `calendarView/delta`, following every nextLink to the
 *     deltaLink; each page committed with its notifications and the link after it (`run.save`), so a
 *     change is announced once, and a run out of time goes on where it stopped. A calendar's first
 *     round (the grant's first run, or a calendar new since) announces nothing.
 *   - A calendarView holds instances: single events, a series' occurrences and its changed ones. As for
 *     provider A (and as GET answers them), a series is announced as its master, once per version,
 *     whichever of its occurrences the round lists; a changed occurrence as `<series ID>_<key>`.
 *     `event.created` for an event created since the last round began, `event.updated` otherwise.
 *   - `@removed` names only a Graph ID: a single event or a changed occurrence is told by the versions
 *     the rounds have seen (by ID hash, so that the record stays small), and announced `event.deleted`
 *     once (one still there left the window: `event.updated`, no longer followed); an ID of no event
 *     seen (a plain occurrence) makes the round read the calendar's series masters: one gone is a
 *     deleted series, one changed (an occurrence cancelled) is its `event.updated`.
 *   - Every change is announced only when its version differs from the one last announced, so reading
 *     a page again (a run that failed after a commit, a recovery) announces nothing twice.
 *   - An expired link (410 `syncStateNotFound`: GraphGoneError), like an expired sync token for
 *     provider A, starts a new round that announces what was modified since the last round began
 *     (lastModifiedDateTime) in a version not announced yet; at its end it keeps what the rounds before
 *     it had seen as well (an event deleted while it went on is then a removal of an event seen). An
 *     event deleted before that round's first page is what no API gives back: only its ID hash is kept.
 *     The hashes of events deleted in such a gap stay in the record (a few bytes each).
 * The window: Graph's delta of a calendarView needs one, fixed for all the rounds of its links. It
 * reaches a year back (a past event is seldom changed, and one older is not followed) and five years
 * ahead (most series are planned within it). An event outside it is never announced, nor its deletion;
 * one moved out of it is announced updated once, then not followed. When the window's end comes within
 * four years, a new window is taken, as after an expired link.
 */

type Cursor = NonNullable<MailSyncRecord['graph_calendars']>['calendars'][string];
type Versions = Record<string, string>;

/** Entries per page: a page's notifications and the state fit one DynamoDB transaction (100 items). */
const PAGE = 90;
/** Notifications committed together at most: with the state, one transaction. */
const COMMIT = 90;
const CALENDARS_PAGE = 250;
const YEAR = 365 * 86_400_000;
const WINDOW_BACK = YEAR;
const WINDOW_AHEAD = 5 * YEAR;
/** A new window is taken when the delta link's reaches less than this ahead. */
const WINDOW_MIN_AHEAD = 4 * YEAR;
/** Exchange stamps creations and changes by its clock: "since a round began" reaches this far before it. */
const MARGIN_MS = 60_000;
const READ = { $select: [...GRAPH_EVENT_SELECT, 'changeKey'], $expand: METADATA_EXPAND };
const PREFER_TEXT = { Prefer: 'outlook.body-content-type="text"' };
const DELTA_HEADERS = { Prefer: `odata.maxpagesize=${PAGE}` };

interface DeltaEntry extends GraphEvent {
  changeKey?: string | null;
  '@removed'?: { reason?: string };
}

const hashOf = (value: string, length: number) =>
  createHash('sha256').update(value).digest('base64url').slice(0, length);
/** An event's key in the cursor (48 bits: no two events of one calendar meet). */
const keyOf = (graphId: string) => hashOf(graphId, 8);
const versionOf = (e: DeltaEntry) => hashOf(e.changeKey ?? e.lastModifiedDateTime ?? '', 6);
const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) || 0 : 0);

const notificationId = (grant: GrantRecord, what: string, change: string, version: string) =>
  derivedId('notification', clock.nowMs(), `${grant.id}\n${what}\n${change}\n${version}`);

const note = (grant: GrantRecord, type: NotificationType, object: object, what: string, version: string) => ({
  notification: newNotification({
    type,
    applicationId: grant.application_id as ApplicationId,
    grantId: grant.id as GrantId,
    object,
    id: notificationId(grant, what, type, version),
  }),
});

const deletedEvent = (grant: GrantRecord, calendarId: string, id: string) =>
  note(grant, 'event.deleted', { id, object: 'event', grant_id: grant.id, calendar_id: calendarId }, id, 'gone');

/** Commits the next state with its notifications, then makes it the run's state. */
async function commit(run: SyncRun, next: MailSyncRecord, outbox: OutboxEntry[] = []): Promise<void> {
  await run.save(next, outbox);
  Object.assign(run.state, next);
}

async function calendarList(client: GraphClient): Promise<GraphCalendar[]> {
  const found: GraphCalendar[] = [];
  for await (const page of client.pages<GraphCalendar>({
    path: `${client.mailbox}/calendars`,
    query: { $top: CALENDARS_PAGE, $select: GRAPH_CALENDAR_SELECT },
  }))
    found.push(...page.value);
  return found;
}

/** Events as GET answers them (by Graph ID); one gone since is left out (its removal comes in a later round). */
async function readEvents(client: GraphClient, ids: readonly string[]): Promise<Map<string, DeltaEntry>> {
  const unique = [...new Set(ids)];
  const answers = await client.all<DeltaEntry>(
    unique.map((id) => ({
      path: `${client.mailbox}/events/${encodeURIComponent(id)}`,
      query: READ,
      headers: PREFER_TEXT,
    })),
  );
  const found = new Map<string, DeltaEntry>();
  answers.forEach((answer, i) => {
    if (answer.status === 'fulfilled') found.set(unique[i]!, answer.value);
    else if (!(answer.reason instanceof GraphNotFoundError)) throw answer.reason;
  });
  return found;
}

const seriesOf = (master: GraphEvent) => ({ allDay: master.isAllDay === true, zone: zoneOfEvent(master) });

/**
 * One page of a round as notifications, with the cursor's maps brought up to it. A quiet round only
 * takes the versions; a recovery announces what was modified since `recover_since` in a version not
 * seen before it. Notifications come in chunks, each with the maps as they are after it.
 */
async function pageNotes(
  grant: GrantRecord,
  client: GraphClient,
  calendarId: string,
  cp: Cursor,
  entries: readonly DeltaEntry[],
): Promise<{ chunks: { notes: OutboxEntry[]; events: Versions; series: Versions }[] }> {
  const events: Versions = { ...cp.events };
  const series: Versions = { ...cp.series };
  const quiet = cp.silent === true && cp.recover_since === undefined;
  const recovering = cp.silent === true && cp.recover_since !== undefined;
  const since = recovering ? cp.recover_since! : (cp.read_at ?? 0);
  const known = (key: string) => (recovering ? cp.before?.events[key] : events[key]);
  const knownSeries = (id: string) => (recovering ? cp.before?.series[id] : series[id]);
  const notes: OutboxEntry[] = [];
  const chunks: { notes: OutboxEntry[]; events: Versions; series: Versions }[] = [];
  const push = (entry: OutboxEntry) => {
    notes.push(entry);
    if (notes.length === COMMIT) chunks.push({ notes: notes.splice(0), events: { ...events }, series: { ...series } });
  };
  // Worth announcing: not quiet, a version not announced (before this round, nor by an earlier commit
  // of its page), and, recovering, modified in the gap.
  const wanted = (e: DeltaEntry, before: string | undefined, now: string | undefined) =>
    !quiet &&
    before?.split(' ')[0] !== versionOf(e) &&
    now?.split(' ')[0] !== versionOf(e) &&
    (!recovering || ms(e.lastModifiedDateTime) >= since);

  const masters = new Set<string>();
  const removedSingles: string[] = [];
  const toRead: DeltaEntry[] = [];
  for (const e of entries) {
    if (e['@removed']) {
      const key = keyOf(e.id);
      const seen = events[key];
      if (seen === undefined) {
        // A plain occurrence (or an event never seen): its series tells what happened.
        for (const id of Object.keys(series)) masters.add(id);
        continue;
      }
      const ourId = seen.split(' ')[1];
      delete events[key];
      if (quiet) continue;
      if (ourId) push(deletedEvent(grant, calendarId, ourId));
      else removedSingles.push(e.id);
      continue;
    }
    if (e.type === 'occurrence' || e.type === 'seriesMaster' || e.type === 'exception')
      masters.add(e.type === 'seriesMaster' ? e.id : (e.seriesMasterId ?? e.id));
    if (e.type === 'occurrence' || e.type === 'seriesMaster') continue;
    if (wanted(e, known(keyOf(e.id)), events[keyOf(e.id)])) toRead.push(e);
    else if (e.type !== 'exception') events[keyOf(e.id)] = versionOf(e);
  }
  const [read, masterRead, stillThere] = await Promise.all([
    readEvents(
      client,
      toRead.map((e) => e.id),
    ),
    readEvents(client, [...masters]),
    readEvents(client, removedSingles),
  ]);
  // A single event removed from the view: deleted, or moved out of the window (then no longer followed).
  for (const id of removedSingles) {
    const now = stillThere.get(id);
    push(
      now
        ? note(grant, 'event.updated', eventFromGraph(grant, calendarId, now), id, now.changeKey ?? '')
        : deletedEvent(grant, calendarId, id),
    );
  }
  for (const e of entries) {
    if (e['@removed'] || e.type === 'occurrence' || e.type === 'seriesMaster') continue;
    const key = keyOf(e.id);
    const master = e.type === 'exception' ? masterRead.get(e.seriesMasterId ?? '') : undefined;
    // A changed occurrence is named by its series; one whose series is gone goes with it.
    if (e.type === 'exception' && !master) continue;
    const ourId = eventIdOf(e, master ? seriesOf(master) : undefined);
    const now = read.get(e.id);
    if (!toRead.includes(e) || !now) {
      if (!toRead.includes(e) && master) events[key] = `${versionOf(e)} ${ourId}`;
      continue;
    }
    const before = known(key);
    const created = before === undefined && e.type !== 'exception' && ms(now.createdDateTime) >= since;
    events[key] = master ? `${versionOf(now)} ${ourId}` : versionOf(now);
    push(
      note(
        grant,
        created ? 'event.created' : 'event.updated',
        eventFromGraph(grant, calendarId, now, master ? seriesOf(master) : undefined),
        ourId,
        now.changeKey ?? '',
      ),
    );
  }
  for (const id of masters) {
    const master = masterRead.get(id);
    if (!master) {
      // The series is gone: announced deleted once, if it was seen.
      if (series[id] !== undefined || knownSeries(id) !== undefined) {
        delete series[id];
        if (!quiet) push(deletedEvent(grant, calendarId, id));
      }
      continue;
    }
    const before = knownSeries(id);
    if (!wanted(master, before, series[id])) {
      series[id] = versionOf(master);
      continue;
    }
    const created = before === undefined && ms(master.createdDateTime) >= since;
    series[id] = versionOf(master);
    push(
      note(
        grant,
        created ? 'event.created' : 'event.updated',
        eventFromGraph(grant, calendarId, master),
        id,
        master.changeKey ?? '',
      ),
    );
  }
  chunks.push({ notes, events, series });
  return { chunks };
}

/**
 * One calendar's round from its cursor, a page at a time, each page committed with its notifications
 * and the link to go on from, the last one with the next round's deltaLink.
 */
async function readCalendar(
  grant: GrantRecord,
  client: GraphClient,
  run: SyncRun,
  calendarId: string,
): Promise<{ status: 'done' | 'more' | 'gone'; announced: number }> {
  let announced = 0;
  const save = async (cursor: Cursor, notes: OutboxEntry[] = []) => {
    announced += notes.length;
    const all = run.state.graph_calendars!.calendars;
    await commit(run, { ...run.state, graph_calendars: { calendars: { ...all, [calendarId]: cursor } } }, notes);
  };
  /** A new round from the window's start, quiet but for what changed since `owed` (absent: nothing). */
  const fresh = (cp: Cursor, owed: number | undefined): Cursor => ({
    version: cp.version,
    ...(cp.read_at !== undefined ? { read_at: cp.read_at } : {}),
    silent: true,
    ...(owed !== undefined
      ? {
          recover_since: owed,
          before: cp.before ?? { events: cp.events ?? {}, series: cp.series ?? {} },
        }
      : {}),
  });
  let cp = run.state.graph_calendars!.calendars[calendarId]!;
  const path = `${client.mailbox}/calendars/${encodeURIComponent(calendarId)}/calendarView/delta`;
  for (;;) {
    if (run.outOfTime()) return { status: 'more', announced };
    const now = clock.nowMs();
    if (!cp.next_link && !cp.delta_link && !cp.silent) cp = fresh(cp, undefined);
    else if (!cp.next_link && cp.delta_link && (cp.window_end ?? 0) - now < WINDOW_MIN_AHEAD)
      cp = fresh(cp, cp.read_at);
    const roundAt = cp.next_link ? (cp.round_at ?? now - MARGIN_MS) : now - MARGIN_MS;
    const windowEnd = cp.next_link || cp.delta_link ? (cp.window_end ?? 0) : now + WINDOW_AHEAD;
    const from = cp.next_link ??
      cp.delta_link ?? {
        path,
        query: {
          startDateTime: new Date(now - WINDOW_BACK).toISOString(),
          endDateTime: new Date(windowEnd).toISOString(),
        },
      };
    let page: GraphPage<DeltaEntry>;
    try {
      page = await client.page<DeltaEntry>(from, DELTA_HEADERS);
    } catch (error) {
      // Deleted since it was listed: the next run drops its cursor.
      if (error instanceof GraphNotFoundError) return { status: 'gone', announced };
      // Only a link expires: a first request answered 410 is Graph's failure, not ours to go round.
      if (!(error instanceof GraphGoneError) || typeof from !== 'string') throw error;
      countMetric(METRICS.cursorResets, { provider: 'microsoft' });
      // The round starts again, from the window's start: what changed since the last round began is owed.
      cp = fresh(cp, cp.silent ? cp.recover_since : cp.read_at);
      await save(cp);
      continue;
    }
    const { chunks } = await pageNotes(grant, client, calendarId, cp, page.value);
    for (const chunk of chunks.slice(0, -1))
      await save({ ...cp, events: chunk.events, series: chunk.series }, chunk.notes);
    const last = chunks[chunks.length - 1]!;
    const {
      next_link: _n,
      round_at: _r,
      silent: _s,
      recover_since: _o,
      before: _b,
      delta_link: _d,
      window_end: _w,
      ...kept
    } = cp;
    const maps = { events: last.events, series: last.series };
    if (page.deltaLink !== undefined) {
      // A new window's round keeps what the rounds before it had seen too: an event deleted while the
      // round went on (listed on a later page) is removed from the next round as an event seen.
      const ended = cp.before
        ? { events: { ...cp.before.events, ...maps.events }, series: { ...cp.before.series, ...maps.series } }
        : maps;
      await save(
        { ...kept, ...ended, delta_link: page.deltaLink, window_end: windowEnd, read_at: roundAt },
        last.notes,
      );
      return { status: 'done', announced };
    }
    if (page.nextLink === undefined)
      throw new ProviderError(`Provider B ended a delta round of calendar '${calendarId}' without its deltaLink`);
    cp = {
      ...kept,
      ...maps,
      ...(cp.silent ? { silent: true } : {}),
      ...(cp.recover_since !== undefined ? { recover_since: cp.recover_since } : {}),
      ...(cp.before ? { before: cp.before } : {}),
      next_link: page.nextLink,
      round_at: roundAt,
      window_end: windowEnd,
    };
    await save(cp, last.notes);
  }
}

export const graphCalendarChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await graphClientOf(grant);
    const seeding = run.state.graph_calendars === undefined;
    const known = run.state.graph_calendars?.calendars ?? {};
    const listed = await calendarList(client);
    const ids = new Set(listed.map((c) => c.id));
    // The calendar list first: what appeared, changed and went since the last run.
    const outbox: OutboxEntry[] = [];
    const calendars: Record<string, Cursor> = {};
    for (const entry of listed) {
      const calendar = calendarFromGraph(grant, entry);
      const version = hashOf(JSON.stringify(calendar), 16);
      const before = known[entry.id];
      if (!seeding && !before) outbox.push(note(grant, 'calendar.created', calendar, entry.id, version));
      else if (!seeding && before!.version !== version)
        outbox.push(note(grant, 'calendar.updated', calendar, entry.id, version));
      calendars[entry.id] = before ? { ...before, version } : { version };
    }
    for (const id of Object.keys(known))
      if (!ids.has(id))
        outbox.push(
          note(grant, 'calendar.deleted', { id, object: 'calendar', grant_id: grant.id }, id, known[id]!.version),
        );
    // Unchanged, the list commits nothing (each calendar's round commits its own cursor).
    const same =
      !seeding &&
      Object.keys(known).length === listed.length &&
      listed.every((c) => known[c.id]?.version === calendars[c.id]!.version);
    if (!same) await commit(run, { ...run.state, graph_calendars: { calendars } }, outbox);
    let changed = outbox.length > 0;

    // Then each calendar's events, from its own link.
    for (const entry of listed) {
      if (run.outOfTime()) return { status: 'more', changed };
      const read = await readCalendar(grant, client, run, entry.id);
      changed ||= read.announced > 0;
      if (read.status === 'more') return { status: 'more', changed };
    }
    return { status: 'done', changed };
  },
};
