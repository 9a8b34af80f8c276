import * as scheduled from '#shared/mailbox/scheduled';
import { imapSend } from '#shared/imap/send';
import { gmailSend } from '#shared/google/send';
import { graphSend } from '#shared/microsoft/send';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { SendProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, SendProvider>> = {
  agent: { send: scheduled.sendOrSchedule },
  imap: imapSend,
  icloud: imapSend,
  // Providers A and B send through their own APIs (shared/google/, shared/microsoft/); Yahoo's accounts over SMTP with their access tokens.
  google: gmailSend,
  microsoft: graphSend,
  yahoo: imapSend,
};

export const senderOf = (grant: GrantRecord) => providerOf(registry, grant, 'Sending');

export type { SendProvider };
