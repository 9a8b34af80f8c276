import * as scheduled from '#shared/agent/schedules';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { SchedulesProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

const registry: Partial<Record<Provider, SchedulesProvider>> = {
  agent: {
    listSchedules: scheduled.listScheduleObjects,
    getSchedule: scheduled.getScheduleObject,
    cancelSchedule: scheduled.cancelScheduledSend,
  },
};

/** Same capability name as senderOf: to a client, scheduled sends are part of Sending. */
export const schedulesOf = (grant: GrantRecord) => providerOf(registry, grant, 'Sending');

export type { SchedulesProvider };
