import * as agent from '#shared/mailbox/calendars';
import { calDavCalendars } from '#shared/dav/calendars';
import { googleCalendars } from '#shared/google/calendars';
import { graphCalendars } from '#shared/microsoft/calendars';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { CalendarsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, CalendarsProvider>> = {
  agent: {
    list: agent.listCalendars,
    get: agent.getCalendar,
    create: agent.createCalendar,
    update: agent.updateCalendar,
    delete: agent.deleteCalendar,
  },
  // IMAP accounts keep their calendars on a CalDAV server, when they name one (settings.caldav_url).
  imap: calDavCalendars,
  icloud: calDavCalendars,
  yahoo: calDavCalendars,
  // Provider A's calendars, live from Calendar v3.
  google: googleCalendars,
  // Provider B's, live from Microsoft Graph.
  microsoft: graphCalendars,
};

export const calendarsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Calendars');
