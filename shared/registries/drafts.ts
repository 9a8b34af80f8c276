import * as agent from '#shared/mailbox/drafts';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { imapDrafts } from '#shared/imap/drafts';
import { gmailDrafts } from '#shared/google/drafts';
import { graphDrafts } from '#shared/microsoft/drafts';
import type { DraftsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, DraftsProvider>> = {
  agent: {
    list: agent.listDrafts,
    get: async (grant, draftId) => agent.draftObject(await agent.requireDraft(grant, draftId)),
    create: agent.createDraft,
    update: agent.updateDraft,
    delete: agent.deleteDraft,
  },
  imap: imapDrafts,
  icloud: imapDrafts,
  google: gmailDrafts,
  microsoft: graphDrafts,
  // Yahoo's accounts over IMAP with their access tokens.
  yahoo: imapDrafts,
};

export const draftsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Drafts');

export type { DraftsProvider };
