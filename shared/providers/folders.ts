import * as agent from '#shared/agent/folders';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/providers/mailbox';

export interface FoldersProvider {
  list: typeof agent.listFolders;
  get: typeof agent.getFolder;
  create: typeof agent.createFolder;
  update: typeof agent.updateFolder;
  delete: typeof agent.deleteFolder;
}

const registry: Partial<Record<Provider, FoldersProvider>> = {
  agent: { list: agent.listFolders, get: agent.getFolder, create: agent.createFolder, update: agent.updateFolder, delete: agent.deleteFolder },
};

export const foldersOf = (grant: GrantRecord) => providerOf(registry, grant, 'Folders');
