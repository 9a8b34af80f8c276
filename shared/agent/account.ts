import { primaryCalendarItem } from '#shared/mailbox/calendars';
import { systemFolderRecords } from '#shared/mailbox/system-folders';
import { folderPutItems } from '#shared/db/folders';
import { agentAddressRelease, agentAddressReservation } from '#shared/db/grants';
import type { NamedTransactItem } from '#shared/db/transact';
import { InvalidRequestError } from '#shared/errors';
import type { AccountHooks } from '#shared/providers/contract';

/**
 * Agent Account grants: the account is the address the request names (reserved across the whole
 * deployment, so inbound mail finds one mailbox), and the mailbox starts with its system folders,
 * created in the same transaction as the grant.
 */
export const agentAccounts: AccountHooks = {
  governed: true,
  // Those it refuses with a reason of their own included.
  settingsFields: ['email', 'email_address', 'app_password', 'policy_id', 'credential_id', 'scopes'],
  account(request) {
    const settings = request.settings;
    if (settings.credential_id !== undefined || settings.scopes !== undefined) {
      throw new InvalidRequestError(
        'settings.credential_id and settings.scopes do not apply to Agent Accounts; send only settings.email',
      );
    }
    if (settings.policy_id !== undefined) {
      throw new InvalidRequestError(
        "'settings.policy_id' is not accepted here: a policy applies through a workspace (PATCH /v3/workspaces/{id} with policy_id); create the account with workspace_id",
      );
    }
    if (settings.app_password !== undefined) {
      throw new InvalidRequestError(
        "'settings.app_password' is not available: Agent Accounts here offer no IMAP or SMTP client access; omit it",
      );
    }
    const { email, email_address: alias } = settings;
    if (email !== undefined && alias !== undefined && email.toLowerCase() !== alias.toLowerCase()) {
      throw new InvalidRequestError(
        "'settings.email' and 'settings.email_address' name different addresses; send one of them",
      );
    }
    const address = email ?? alias;
    if (address === undefined) throw new InvalidRequestError("'settings.email' is required for an Agent Account");
    return {
      email: address.toLowerCase(),
      settings: {},
      ...(request.name !== undefined ? { name: request.name } : {}),
    };
  },
  update(request) {
    if (request.scope !== undefined) {
      throw new InvalidRequestError(
        "'scope' cannot change for an Agent Account: it always covers its own mail and calendar",
      );
    }
    if (request.settings !== undefined) {
      const names = Object.keys(request.settings);
      const why = names.includes('app_password')
        ? 'Agent Accounts here offer no IMAP or SMTP client access'
        : 'an Agent Account has no provider settings';
      throw new InvalidRequestError(
        `'settings' cannot be updated for an Agent Account (${names.length ? names.join(', ') : 'empty'}): ${why}`,
      );
    }
  },
  created(grant, now) {
    const folders = systemFolderRecords(grant.id, now)
      .flatMap(folderPutItems)
      .map((item, i): NamedTransactItem => [`folder:${i}`, item]);
    // The primary calendar comes with the account (shared/mailbox/calendars.ts).
    return [agentAddressReservation(grant), ...folders, primaryCalendarItem(grant, now)];
  },
  deleted(grant) {
    return [agentAddressRelease(grant)];
  },
};
