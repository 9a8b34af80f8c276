import { InvalidRequestError } from '#shared/errors';
import type { AccountHooks } from '#shared/providers/contract';

/**
 * Grants of accounts at an OAuth provider (hosted OAuth, bulk authentication). Nothing of the account
 * is stored here but its tokens (sealed, beside the grant: shared/accounts/connected.ts); its scopes and
 * settings change only by authenticating again. Deleting the grant revokes its tokens (the purge job,
 * shared/accounts/purge.ts).
 */
export const connectedAccounts: AccountHooks = {
  governed: false,
  // Bulk authentication's (shared/connect/bulk.ts), those it refuses with a reason of their own included.
  settingsFields: ['email', 'email_address', 'app_password', 'policy_id', 'credential_id', 'scopes'],
  update(request) {
    if (request.scope !== undefined || request.settings !== undefined) {
      throw new InvalidRequestError(
        `'${request.scope !== undefined ? 'scope' : 'settings'}' of a connected grant change only by authenticating again (GET /v3/connect/auth, or POST /v3/connect/custom for bulk grants): the provider decides what the grant may do`,
      );
    }
  },
  created: () => [],
  deleted: () => [],
};
