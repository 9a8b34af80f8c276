import type { GrantRecord } from '#shared/db/grants';
import type { DavCheckpoints } from '#shared/db/mail-sync';
import { logger } from '#shared/logger';
import type { SyncSource, SyncOutcome, SyncRun } from '#shared/providers/contract';
import { DavError, type DavClient } from '#shared/dav/client';
import { hasCalDav, syncCalendarList } from '#shared/dav/calendars';
import { syncCalendarObjects } from '#shared/dav/events';
import { syncAddressBook } from '#shared/dav/contacts';
import { davClientOf, davSettingsOf } from '#shared/dav/session';

/**
 * The CalDAV and CardDAV part of a grant's sync runs (shared/services/mail-sync.ts: serialized per
 * grant by its lease, bounded, scheduled adaptively, backing off on failure): the calendar list, then
 * each calendar's changes since its sync token, then the address book's. A collection's first read
 * is history and announces nothing; later ones commit event.*, calendar.* and contact.* through the
 * outbox. The checkpoint is saved after each collection. A login the server refuses for good fails
 * the run as a refused IMAP login does (the grant becomes invalid, grant.expired).
 */
const log = logger.child({ module: 'dav-sync' });

/** A refused login, marked as the sync service recognises one. */
function marked(error: unknown): unknown {
  if (error instanceof DavError && error.kind === 'unauthorized')
    return Object.assign(error, { authenticationFailed: true });
  return error;
}

async function firstAddressBook(client: DavClient, home: string): Promise<string | undefined> {
  return (await client.listCollections(home)).find((c) => c.kind === 'addressbook')?.url;
}

export async function runDavSync(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
  const settings = davSettingsOf(grant);
  if (!settings.calendar_home && !settings.addressbook_home) return { status: 'done', changed: false };
  const state = run.state;
  const dav: DavCheckpoints = state.dav ?? { calendars: {}, listed: false };
  let changed = false;
  try {
    const client = await davClientOf(grant);
    if (hasCalDav(grant)) {
      const list = await syncCalendarList(grant, client, { quiet: !dav.listed });
      changed ||= list.changed && dav.listed;
      dav.listed = true;
      const live = new Set<string>(list.calendars.map((c) => c.id));
      for (const id of Object.keys(dav.calendars)) if (!live.has(id)) delete dav.calendars[id];
      for (const calendar of list.calendars) {
        if (run.outOfTime()) return { status: 'more', changed };
        if (!calendar.href) continue;
        const checkpoint = dav.calendars[calendar.id];
        // The collection's CTag did not move: nothing in it changed since the last run.
        const ctag = list.ctags.get(calendar.id);
        if (checkpoint?.seeded && ctag !== undefined && checkpoint.ctag === ctag) continue;
        const outcome = await syncCalendarObjects(
          grant,
          client,
          { ...calendar, href: calendar.href },
          checkpoint?.token,
          !checkpoint?.seeded,
        );
        if (outcome.skipped.length)
          log.warn('calendar objects skipped', {
            grant_id: grant.id,
            calendar_id: calendar.id,
            skipped: outcome.skipped,
          });
        changed ||= checkpoint?.seeded === true && outcome.changed + outcome.deleted > 0;
        dav.calendars[calendar.id] = {
          ...(outcome.token !== undefined ? { token: outcome.token } : {}),
          ...(ctag !== undefined ? { ctag } : {}),
          seeded: true,
        };
        await run.save({ ...state, dav });
      }
    }
    if (settings.addressbook_home && !run.outOfTime()) {
      const url = dav.address_book?.url ?? (await firstAddressBook(client, settings.addressbook_home));
      if (url) {
        const seeded = dav.address_book?.url === url && dav.address_book.seeded;
        const outcome = await syncAddressBook(
          { grant, client, addressBook: url },
          seeded && dav.address_book?.token ? { token: dav.address_book.token } : {},
          { quiet: !seeded },
        );
        if (outcome.skipped.length) log.warn('vCards skipped', { grant_id: grant.id, skipped: outcome.skipped });
        changed ||= seeded && outcome.changed + outcome.deleted > 0;
        dav.address_book = { url, ...(outcome.token !== undefined ? { token: outcome.token } : {}), seeded: true };
        await run.save({ ...state, dav });
      }
    }
  } catch (error) {
    throw marked(error);
  }
  state.dav = dav;
  return { status: 'done', changed };
}

export const davSync: SyncSource = { run: runDavSync };
