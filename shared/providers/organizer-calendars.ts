import type { GrantRecord, Provider } from '#shared/db/grants';

/**
 * Which calendars a scheduler organizer of each provider reads for availability and books on:
 * an Agent Account's primary calendar only (its configuration may name no other); any calendar of
 * the grant for the others.
 */
const PRIMARY_ONLY: ReadonlySet<Provider> = new Set<Provider>(['agent']);

export const booksOnPrimaryOnly = (grant: GrantRecord): boolean => PRIMARY_ONLY.has(grant.provider);
