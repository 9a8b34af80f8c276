import { storedFolders } from '#shared/mailbox/folders';
import { imapFolders } from '#shared/imap/folders';
import { gmailFolders } from '#shared/google/folders';
import { graphFolders } from '#shared/microsoft/folders';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { FoldersProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, FoldersProvider>> = {
  agent: storedFolders(),
  imap: imapFolders,
  icloud: imapFolders,
  // Providers A and B answer from their own APIs (shared/google/, shared/microsoft/); Yahoo's accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: gmailFolders,
  microsoft: graphFolders,
  yahoo: imapFolders,
};

export const foldersOf = (grant: GrantRecord) => providerOf(registry, grant, 'Folders');

export type { FoldersProvider };
