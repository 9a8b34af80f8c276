/**
 * The benchmark suites, in the order `npm run bench` runs them. Each is loaded only when it runs:
 * suites read their sizes (and the smoke switch) when their module loads.
 */
export const SUITES = {
  foundation: async () => (await import('./foundation')).runFoundationBench(),
  mailbox: async () => (await import('./mailbox')).runMailboxBench(),
  send: async () => (await import('./send')).runSendBench(),
  scheduled: async () => (await import('./scheduled')).runScheduledBench(),
  lists: async () => (await import('./lists')).runListsBench(),
  webhooks: async () => (await import('./webhooks')).runWebhooksBench(),
  imap: async () => (await import('./imap')).runImapBench(),
  calendar: async () => (await import('./calendar')).runCalendarBench(),
  caldav: async () => (await import('./caldav')).runCalDavBench(),
  google: async () => (await import('./google')).runGoogleBench(),
  microsoft: async () => (await import('./microsoft')).runMicrosoftBench(),
  availability: async () => (await import('./availability')).runAvailabilityBench(),
  scheduler: async () => (await import('./scheduler')).runSchedulerBench(),
  start: async () => (await import('./start')).runStartBench(),
} satisfies Record<string, () => Promise<void>>;

export type SuiteName = keyof typeof SUITES;
export const SUITE_NAMES = Object.keys(SUITES) as SuiteName[];
