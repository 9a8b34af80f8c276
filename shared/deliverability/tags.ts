import type { SendTags } from '#shared/mail/transport';

/**
 * The names of the SES message tags that say whose message it is (shared/mail/transport.ts sets
 * them; shared/deliverability/ses-events.ts reads them back from the events). Tag names allow
 * letters, digits, `_` and `-`.
 */
export const SES_TAG_NAMES: Record<keyof SendTags, string> = {
  application: 'switchboard_application',
  grant: 'switchboard_grant',
  message: 'switchboard_message',
};

/** The `grant` tag of a transactional send, which has no grant. */
export const TRANSACTIONAL = 'transactional';
