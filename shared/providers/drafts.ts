import * as agent from '#shared/agent/drafts';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/providers/mailbox';

export interface DraftsProvider {
  list: typeof agent.listDrafts;
  get: (grant: GrantRecord, draftId: string) => ReturnType<typeof agent.draftObject>;
  create: typeof agent.createDraft;
  update: typeof agent.updateDraft;
  delete: typeof agent.deleteDraft;
  send: typeof agent.sendDraft;
}

const registry: Partial<Record<Provider, DraftsProvider>> = {
  agent: {
    list: agent.listDrafts,
    get: async (grant, draftId) => agent.draftObject(await agent.requireDraft(grant, draftId)),
    create: agent.createDraft,
    update: agent.updateDraft,
    delete: agent.deleteDraft,
    send: agent.sendDraft,
  },
};

export const draftsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Drafts');
