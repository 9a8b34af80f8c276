import type { GrantRecord, Provider } from '#shared/db/grants';
import { imapMailSync } from '#shared/imap/mail-sync';
import type { MailSync } from '#shared/providers/contract';

/** Providers whose grants' mail lives on another server, kept in step by sync runs (shared/services/mail-sync.ts). */
/** IMAP accounts, and the OAuth providers' accounts over IMAP with their access tokens (names.ts MAIL_SYNCED_PROVIDERS). */
const registry: Partial<Record<Provider, MailSync>> = { imap: imapMailSync, icloud: imapMailSync, google: imapMailSync, microsoft: imapMailSync, yahoo: imapMailSync };

/** The grant's sync, or undefined when its mail needs none (an Agent Account's is stored as it arrives). */
export const mailSyncOf = (grant: GrantRecord): MailSync | undefined => registry[grant.provider];
