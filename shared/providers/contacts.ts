import { storedContacts } from '#shared/contacts/stored';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { ContactsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

/**
 * Agent Accounts keep their address book with the account; mailboxes read over IMAP keep theirs
 * here too (their servers have no contacts protocol we speak), and both collect inbox contacts from
 * their synced or delivered mail.
 */
const registry: Partial<Record<Provider, ContactsProvider>> = {
  agent: storedContacts,
  imap: storedContacts,
  icloud: storedContacts,
  google: storedContacts,
  microsoft: storedContacts,
  yahoo: storedContacts,
};

export const contactsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Contacts');
