import { InvalidRequestError } from '#shared/errors';
import { IMAP_SETTINGS } from '#shared/accounts/settings';
import type { AccountHooks } from '#shared/providers/contract';

/**
 * The lifecycle hooks of IMAP grants (shared/registries/accounts.ts), apart from their creation
 * (shared/connect/custom-account.ts: it checks the servers and seals the passwords), so that the functions that
 * only read or update grants bundle none of that.
 */
export const imapAccounts: AccountHooks = {
  governed: false,
  settingsFields: IMAP_SETTINGS,
  update(request) {
    if (request.scope !== undefined || request.settings !== undefined) {
      throw new InvalidRequestError(
        `'${request.scope !== undefined ? 'scope' : 'settings'}' of an IMAP grant change by connecting the account again (POST /v3/connect/custom with its new settings): they are checked against its servers first`,
      );
    }
  },
  created: () => [],
  deleted: () => [],
};
