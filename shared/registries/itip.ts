import { agentAccountMail, agentInvitations } from '#shared/agent/itip';
import { imapAccountMail } from '#shared/imap/account-mail';
import { gmailAccountMail } from '#shared/google/account-mail';
import { graphAccountMail } from '#shared/microsoft/submit';
import type { AccountMail, InvitationInbox } from '#shared/providers/contract';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/registries/provider-of';

/** iMIP's provider side (shared/services/itip.ts): mail from a grant's own address, and where its received invitations land. */
const mail: Partial<Record<Provider, AccountMail>> = {
  agent: agentAccountMail,
  imap: imapAccountMail,
  icloud: imapAccountMail,
  yahoo: imapAccountMail,
  google: gmailAccountMail,
  microsoft: graphAccountMail,
};
const inboxes: Partial<Record<Provider, InvitationInbox>> = { agent: agentInvitations };

export const accountMailOf = (grant: GrantRecord) => providerOf(mail, grant, 'Mail from the account');
export const invitationInboxOf = (grant: GrantRecord) => providerOf(inboxes, grant, 'Invitations');
