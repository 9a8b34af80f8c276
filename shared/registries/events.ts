import * as agent from '#shared/mailbox/events';
import { calDavEvents } from '#shared/dav/events';
import { googleEvents } from '#shared/google/events';
import { graphEvents } from '#shared/microsoft/events';
import { icsEventOf } from '#shared/calendar/imip';
import { buildCalendar } from '#shared/calendar/ical';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { EventsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, EventsProvider>> = {
  agent: {
    list: agent.listEvents,
    get: agent.getEvent,
    ics: async (grant, eventId, calendarId, method = 'PUBLISH') => {
      const { record, overrides } = await agent.eventRecords(grant, eventId, calendarId);
      return buildCalendar(
        method,
        [record, ...overrides].map((r) => icsEventOf(r)),
      );
    },
    create: agent.createEvent,
    update: agent.updateEvent,
    delete: agent.deleteEvent,
    sendRsvp: agent.sendRsvp,
  },
  imap: calDavEvents,
  icloud: calDavEvents,
  yahoo: calDavEvents,
  // Provider A's events, live from Calendar v3.
  google: googleEvents,
  // Provider B's, live from Microsoft Graph.
  microsoft: graphEvents,
};

export const eventsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Events');
