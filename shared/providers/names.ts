/**
 * The providers a grant can belong to: Agent Accounts (mailboxes Switchboard hosts) and the OAuth
 * providers whose accounts are connected by hosted OAuth or bulk authentication. A leaf module
 * (it imports nothing): storage types its records with it.
 */
export const PROVIDERS = ['agent', 'google', 'microsoft', 'yahoo', 'zoom'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** The provider whose grants are the mailboxes this deployment hosts (inbound mail, local delivery). */
export const HOSTED: Provider = 'agent';

/**
 * Provider names in the API and the providers they mean. Agent Accounts answer as `nylas` (the
 * published contract's value for hosted mailboxes) and `agent` is accepted as an alias; connected
 * providers answer under their own names.
 */
const NAMES: Record<string, Provider> = { nylas: 'agent', agent: 'agent', google: 'google', microsoft: 'microsoft', yahoo: 'yahoo', zoom: 'zoom' };
const PUBLIC_NAME: Record<Provider, string> = { agent: 'nylas', google: 'google', microsoft: 'microsoft', yahoo: 'yahoo', zoom: 'zoom' };

/** The provider an API value names (undefined for a value no provider answers to). */
export const providerNamed = (name: string): Provider | undefined => NAMES[name];
/** The value the API answers for a provider. */
export const publicProviderName = (provider: Provider): string => PUBLIC_NAME[provider];
