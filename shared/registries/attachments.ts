import * as agent from '#shared/mailbox/attachments';
import { imapAttachments } from '#shared/imap/attachments';
import { gmailAttachments } from '#shared/google/attachments';
import { graphAttachments } from '#shared/microsoft/attachments';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { AttachmentsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, AttachmentsProvider>> = {
  agent: { get: agent.getAttachment, download: agent.downloadAttachment },
  imap: imapAttachments,
  icloud: imapAttachments,
  // Providers A and B answer from their own APIs (shared/google/, shared/microsoft/); Yahoo's accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: gmailAttachments,
  microsoft: graphAttachments,
  yahoo: imapAttachments,
};

export const attachmentsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Attachments');

export type { AttachmentsProvider };
