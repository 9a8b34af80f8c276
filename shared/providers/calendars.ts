import * as agent from '#shared/agent/calendars';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { CalendarsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

const registry: Partial<Record<Provider, CalendarsProvider>> = {
  agent: { list: agent.listCalendars, get: agent.getCalendar, create: agent.createCalendar, update: agent.updateCalendar, delete: agent.deleteCalendar },
};

export const calendarsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Calendars');
