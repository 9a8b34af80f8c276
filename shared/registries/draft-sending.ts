import { sendDraft } from '#shared/mailbox/draft-send';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { imapDraftSending } from '#shared/imap/draft-send';
import { gmailDraftSending } from '#shared/google/drafts';
import { graphDraftSending } from '#shared/microsoft/drafts';
import type { DraftSendingProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, DraftSendingProvider>> = {
  agent: { send: sendDraft },
  imap: imapDraftSending,
  icloud: imapDraftSending,
  google: gmailDraftSending,
  microsoft: graphDraftSending,
  yahoo: imapDraftSending,
};

/** Same capability name as draftsOf: to a client, sending a draft is part of Drafts. */
export const draftSenderOf = (grant: GrantRecord) => providerOf(registry, grant, 'Drafts');

export type { DraftSendingProvider };
