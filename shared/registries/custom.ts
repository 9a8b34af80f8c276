import { customConnectedGrant } from '#shared/connect/bulk';
import { customImapGrant, customPresetGrant } from '#shared/connect/custom-account';
import type { Provider } from '#shared/db/grants';
import type { CustomAuthentication } from '#shared/providers/contract';

/**
 * The custom authentication of providers whose accounts live elsewhere (bulk authentication, IMAP
 * credentials checked against their servers); Agent Accounts have none: their account hooks make the
 * account from the request itself.
 */
const registry: Partial<Record<Provider, CustomAuthentication>> = {
  google: customConnectedGrant,
  microsoft: customConnectedGrant,
  imap: customImapGrant,
  // Presets of IMAP: the provider's servers and an app password.
  icloud: customPresetGrant,
  yahoo: customPresetGrant,
};

export const customAuthenticationOf = (provider: Provider): CustomAuthentication | undefined => registry[provider];
