import { customConnectedGrant } from '#shared/connect/bulk';
import type { Provider } from '#shared/db/grants';
import type { CustomAuthentication } from '#shared/providers/contract';

/**
 * The custom authentication of providers whose accounts live elsewhere (bulk authentication); Agent
 * Accounts have none: their account hooks make the account from the request itself.
 */
const registry: Partial<Record<Provider, CustomAuthentication>> = { google: customConnectedGrant, microsoft: customConnectedGrant };

export const customAuthenticationOf = (provider: Provider): CustomAuthentication | undefined => registry[provider];
