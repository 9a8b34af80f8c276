/**
 * The stored shapes of an Agent Account mailbox (messages, threads, drafts, folders, attachments).
 * They are defined with the repositories that store them (shared/db/mail-records.ts), so storage
 * imports nothing from here; the Agent code names them through this module.
 */
export type * from '#shared/db/mail-records';
