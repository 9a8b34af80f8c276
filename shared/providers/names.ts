/**
 * The providers a grant can belong to: Agent Accounts (mailboxes Switchboard hosts), the OAuth
 * providers whose accounts are connected by hosted OAuth or bulk authentication, and mailboxes on
 * IMAP/SMTP servers. A leaf module (it imports nothing): storage types its records with it.
 */
export const PROVIDERS = ['agent', 'google', 'microsoft', 'yahoo', 'zoom', 'imap', 'icloud'] as const;
export type Provider = (typeof PROVIDERS)[number];

/**
 * Provider values of the API (schemas/ re-exports them). Agent Accounts (mailboxes Switchboard
 * hosts) answer as `nylas`, the value the published contract uses for hosted accounts, so existing
 * clients recognise them; `agent` is accepted as an alias on input and in `provider=` filters.
 */
export const HOSTED_PROVIDER = 'nylas';
/** The OAuth providers whose accounts hosted OAuth and bulk authentication connect. */
export const CONNECTED_PROVIDERS = ['google', 'microsoft', 'yahoo', 'zoom'] as const;
/** Mailboxes on IMAP/SMTP servers, connected with their credentials (shared/imap/). */
export const IMAP_PROVIDER = 'imap';
/** iCloud accounts: IMAP/SMTP with Apple's servers and an app password (a preset of IMAP). */
export const ICLOUD_PROVIDER = 'icloud';
/** Providers whose grants have sync runs (shared/services/mail-sync.ts): mail synced over IMAP (shared/imap/: IMAP accounts, and B's and Yahoo's accounts with their access tokens), and provider A's changes read from Gmail's history (shared/google/mail-changes.ts). */
export const MAIL_SYNCED_PROVIDERS: readonly Provider[] = ['imap', 'icloud', 'google', 'microsoft', 'yahoo'];
/** Providers `POST /v3/connect/custom` takes: Agent Accounts, bulk authentication of google (service account) and microsoft (admin consent), IMAP, and the IMAP presets icloud and yahoo (app passwords). */
export const CUSTOM_PROVIDERS = [
  HOSTED_PROVIDER,
  'agent',
  'google',
  'microsoft',
  IMAP_PROVIDER,
  ICLOUD_PROVIDER,
  'yahoo',
] as const;
/** Providers a connector can be created for: the published contract's list, without the two Switchboard serves itself or not at all (`nylas`: Agent Accounts need no connector; `virtual-calendar`). */
export const CONNECTOR_PROVIDERS = ['google', 'microsoft', 'yahoo', 'imap', 'icloud', 'ews', 'zoom'] as const;

/**
 * Provider names in the API and the providers they mean. Agent Accounts answer as `nylas` (the
 * published contract's value for hosted mailboxes) and `agent` is accepted as an alias; connected
 * providers answer under their own names.
 */
const NAMES: Record<string, Provider> = {
  nylas: 'agent',
  agent: 'agent',
  google: 'google',
  microsoft: 'microsoft',
  yahoo: 'yahoo',
  zoom: 'zoom',
  imap: 'imap',
  icloud: 'icloud',
};
const PUBLIC_NAME: Record<Provider, string> = {
  agent: 'nylas',
  google: 'google',
  microsoft: 'microsoft',
  yahoo: 'yahoo',
  zoom: 'zoom',
  imap: 'imap',
  icloud: 'icloud',
};

/** The provider an API value names (undefined for a value no provider answers to). */
export const providerNamed = (name: string): Provider | undefined => NAMES[name];
/** The value the API answers for a provider. */
export const publicProviderName = (provider: Provider): string => PUBLIC_NAME[provider];
