import { agentAccounts } from '#shared/agent/account';
import { connectedAccounts } from '#shared/connect/accounts';
import { imapAccounts } from '#shared/imap/accounts';
import { PRESET_SETTINGS } from '#shared/accounts/settings';
import type { Provider } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import type { AccountHooks } from '#shared/providers/contract';

/** The account hooks (shared/providers/contract.ts) of each provider. */
const registry: Record<Provider, AccountHooks> = {
  agent: agentAccounts,
  google: connectedAccounts,
  microsoft: connectedAccounts,
  // Yahoo: hosted OAuth, or an app password (the IMAP preset: shared/connect/custom-account.ts).
  yahoo: { ...connectedAccounts, settingsFields: [...connectedAccounts.settingsFields, ...PRESET_SETTINGS] },
  zoom: connectedAccounts,
  imap: imapAccounts,
  icloud: { ...imapAccounts, settingsFields: PRESET_SETTINGS },
};

export { providerNamed, publicProviderName } from '#shared/providers/names';

export function accountHooksOf(provider: string): AccountHooks {
  const hooks = (registry as Record<string, AccountHooks | undefined>)[provider];
  if (!hooks) throw new InvalidRequestError(`Unsupported provider '${provider}'`);
  return hooks;
}
