import * as agent from '#shared/agent/threads';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/providers/mailbox';

export interface ThreadsProvider {
  list: typeof agent.listThreads;
  get: typeof agent.getThread;
  update: typeof agent.updateThread;
  delete: typeof agent.deleteThread;
}

const registry: Partial<Record<Provider, ThreadsProvider>> = {
  agent: { list: agent.listThreads, get: agent.getThread, update: agent.updateThread, delete: agent.deleteThread },
};

export const threadsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Threads');
