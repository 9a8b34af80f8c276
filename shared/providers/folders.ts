import * as agent from '#shared/agent/folders';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { FoldersProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

const registry: Partial<Record<Provider, FoldersProvider>> = {
  agent: { list: agent.listFolders, get: agent.getFolder, create: agent.createFolder, update: agent.updateFolder, delete: agent.deleteFolder },
};

export const foldersOf = (grant: GrantRecord) => providerOf(registry, grant, 'Folders');

/** Listing alone (rule placement on the store and send paths), so those bundles carry none of the folder changes. */
const listing: Partial<Record<Provider, FoldersProvider['list']>> = { agent: agent.listFolders };
export const folderListOf = (grant: GrantRecord) => providerOf(listing, grant, 'Folders');

export type { FoldersProvider };
