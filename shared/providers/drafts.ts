import * as agent from '#shared/agent/drafts';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { DraftsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

const registry: Partial<Record<Provider, DraftsProvider>> = {
  agent: {
    list: agent.listDrafts,
    get: async (grant, draftId) => agent.draftObject(await agent.requireDraft(grant, draftId)),
    create: agent.createDraft,
    update: agent.updateDraft,
    delete: agent.deleteDraft,
  },
};

export const draftsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Drafts');

export type { DraftsProvider };
