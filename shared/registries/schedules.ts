import * as scheduled from '#shared/mailbox/schedules';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { SchedulesProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

/** Scheduled sends wait in the store the same way for every provider that schedules (the send itself is the provider's: shared/registries/scheduled-sending.ts). */
const stored: SchedulesProvider = {
  listSchedules: scheduled.listScheduleObjects,
  getSchedule: scheduled.getScheduleObject,
  cancelSchedule: scheduled.cancelScheduledSend,
};

const registry: Partial<Record<Provider, SchedulesProvider>> = {
  agent: stored,
  imap: stored,
  icloud: stored,
  google: stored,
  microsoft: stored,
  yahoo: stored,
};

/** Same capability name as senderOf: to a client, scheduled sends are part of Sending. */
export const schedulesOf = (grant: GrantRecord) => providerOf(registry, grant, 'Sending');

export type { SchedulesProvider };
