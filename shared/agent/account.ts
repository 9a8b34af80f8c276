import { systemFolderRecords } from '#shared/agent/system-folders';
import { folderPutItems } from '#shared/db/folders';
import { agentAddressRelease, agentAddressReservation } from '#shared/db/grants';
import type { NamedTransactItem } from '#shared/db/transact';
import { InvalidRequestError } from '#shared/errors';
import type { AccountHooks } from '#shared/providers/accounts';

/**
 * Agent Account grants: the account is the address the request names (reserved across the whole
 * deployment, so inbound mail finds one mailbox), and the mailbox starts with its system folders,
 * created in the same transaction as the grant.
 */
export const agentAccounts: AccountHooks = {
  account(settings) {
    if (settings.credential_id !== undefined || settings.scopes !== undefined) {
      throw new InvalidRequestError("settings.credential_id and settings.scopes do not apply to provider 'agent'; send only settings.email_address");
    }
    if (settings.email_address === undefined) throw new InvalidRequestError("'settings.email_address' is required for provider 'agent'");
    return { email: settings.email_address.toLowerCase(), settings: {} };
  },
  created(grant, now) {
    const folders = systemFolderRecords(grant.id, now)
      .flatMap(folderPutItems)
      .map((item, i): NamedTransactItem => [`folder:${i}`, item]);
    return [agentAddressReservation(grant), ...folders];
  },
  deleted(grant) {
    return [agentAddressRelease(grant)];
  },
};
