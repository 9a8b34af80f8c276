import * as agent from '#shared/mailbox/attachments';
import { imapAttachments } from '#shared/imap/attachments';
import { gmailAttachments } from '#shared/google/attachments';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { AttachmentsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, AttachmentsProvider>> = {
  agent: { get: agent.getAttachment, download: agent.downloadAttachment },
  imap: imapAttachments,
  icloud: imapAttachments,
  // Provider A answers from its own APIs (shared/google/); B's and Yahoo's accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: gmailAttachments,
  microsoft: imapAttachments,
  yahoo: imapAttachments,
};

export const attachmentsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Attachments');

export type { AttachmentsProvider };
