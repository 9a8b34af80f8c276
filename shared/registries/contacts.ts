import { storedContacts } from '#shared/contacts/stored';
import { cardDavContextOf, hasCardDav } from '#shared/dav/address-book';
import { cardDavContacts } from '#shared/dav/contacts';
import { googleContacts } from '#shared/google/contacts';
import { graphContacts } from '#shared/microsoft/contacts';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { ContactsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

/**
 * Agent Accounts keep their address book with the account; IMAP accounts on their CardDAV server
 * when they name one (settings.carddav_url), else here; every mailbox collects inbox contacts from
 * its synced or delivered mail.
 */
/** IMAP accounts that name a CardDAV server keep their address book there; the others, here. */
const cardDav = /* @__PURE__ */ cardDavContacts(cardDavContextOf);
const imapContacts = (grant: GrantRecord): ContactsProvider => (hasCardDav(grant) ? cardDav : storedContacts);

const registry: Partial<Record<Provider, (grant: GrantRecord) => ContactsProvider>> = {
  agent: () => storedContacts,
  imap: imapContacts,
  icloud: imapContacts,
  // Provider A's address book is the People API's, live.
  google: () => googleContacts,
  // Provider B's, Outlook's contacts through Graph, live.
  microsoft: () => graphContacts,
  yahoo: imapContacts,
};

export const contactsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Contacts')(grant);
