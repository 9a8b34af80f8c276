import type { GrantRecord, Provider } from '#shared/db/grants';
import { imapMailSync } from '#shared/imap/mail-sync';
import { davSync } from '#shared/dav/sync';
import { googleCalendarChanges } from '#shared/google/calendar-changes';
import { googleContactChanges } from '#shared/google/contact-changes';
import { gmailMailChanges } from '#shared/google/mail-changes';
import { graphCalendarChanges } from '#shared/microsoft/calendar-changes';
import { graphContactChanges } from '#shared/microsoft/contact-changes';
import { graphMailChanges } from '#shared/microsoft/mail-changes';
import { graphSubscriptionsOf } from '#shared/microsoft/subscriptions';
import { ForbiddenError } from '#shared/errors';
import { logger } from '#shared/logger';
import type { SyncSource } from '#shared/providers/contract';

/** Providers whose grants' mail lives on another server, kept in step by sync runs (shared/services/mail-sync.ts). */
/** IMAP accounts, and the OAuth providers' accounts over IMAP with their access tokens (names.ts MAIL_SYNCED_PROVIDERS). */
/** IMAP accounts with CalDAV or CardDAV servers: their calendars and contacts in the same runs, after their mail. */
const imapAndDav: SyncSource = {
  async run(grant, run) {
    const mail = await imapMailSync.run(grant, run);
    if (run.outOfTime()) return { status: 'more', changed: mail.changed };
    const dav = await davSync.run(grant, run);
    return {
      status: mail.status === 'more' || dav.status === 'more' ? 'more' : 'done',
      changed: mail.changed || dav.changed,
    };
  },
};

/**
 * A live provider's grants: their mail's changes, then their calendars', then their contacts' (each
 * part commits its own cursor), then whatever keeps its push. A part the grant's scopes do not reach
 * (the provider's 403) is left out of the run, so that a grant without the calendar or contacts scope
 * still has its mail announced.
 */
function inParts(parts: readonly (readonly [string, SyncSource])[]): SyncSource {
  return {
    async run(grant, run) {
      let changed = false;
      for (const [part, source] of parts) {
        if (run.outOfTime()) return { status: 'more', changed };
        try {
          const outcome = await source.run(grant, run);
          changed ||= outcome.changed;
          if (outcome.status === 'more') return { status: 'more', changed };
        } catch (error) {
          if (!(error instanceof ForbiddenError) || part === 'mail') throw error;
          logger.info('sync part not allowed by the grant', { grant_id: grant.id, part, reason: error.message });
        }
      }
      return { status: 'done', changed };
    },
  };
}

/** Provider A: Gmail's history, Calendar's and People's sync tokens (its pushes are kept by the mail and calendar parts). */
const googleChanges = inParts([
  ['mail', gmailMailChanges],
  ['calendars', googleCalendarChanges],
  ['contacts', googleContactChanges],
]);

/** Provider B: Graph's delta links of mail folders, calendar views and contact folders, then the grant's Graph subscriptions. */
const microsoftChanges = inParts([
  ['mail', graphMailChanges],
  ['calendars', graphCalendarChanges],
  ['contacts', graphContactChanges],
  ['subscriptions', graphSubscriptionsOf(['messages', 'events', 'contacts'])],
]);

const registry: Partial<Record<Provider, SyncSource>> = {
  imap: imapAndDav,
  icloud: imapAndDav,
  // Provider A's mailbox is not stored: its runs read Gmail's history, Calendar's and People's sync tokens.
  google: googleChanges,
  // Provider B's mailbox is not stored either: its runs read Graph's delta links.
  microsoft: microsoftChanges,
  yahoo: imapAndDav,
};

/** The grant's sync, or undefined when its mail needs none (an Agent Account's is stored as it arrives). */
export const mailSyncOf = (grant: GrantRecord): SyncSource | undefined => registry[grant.provider];
