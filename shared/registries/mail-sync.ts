import type { GrantRecord, Provider } from '#shared/db/grants';
import { imapMailSync } from '#shared/imap/mail-sync';
import { davSync } from '#shared/dav/sync';
import { gmailMailChanges } from '#shared/google/mail-changes';
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

const registry: Partial<Record<Provider, SyncSource>> = {
  imap: imapAndDav,
  icloud: imapAndDav,
  // Provider A's mail is not stored: its runs read Gmail's history since the grant's cursor and announce it.
  google: gmailMailChanges,
  microsoft: imapMailSync,
  yahoo: imapAndDav,
};

/** The grant's sync, or undefined when its mail needs none (an Agent Account's is stored as it arrives). */
export const mailSyncOf = (grant: GrantRecord): SyncSource | undefined => registry[grant.provider];
