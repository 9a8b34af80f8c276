import { busyTimes } from '#shared/mailbox/event-windows';
import { withCalendarsReady } from '#shared/dav/calendars';
import { googleFreeBusy } from '#shared/google/free-busy';
import { graphFreeBusy } from '#shared/microsoft/free-busy';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { FreeBusyProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

/** A CalDAV grant's events are kept in the table as an Agent Account's are: its busy time is read there, once its calendars are known. */
const calDavBusy: FreeBusyProvider = { busy: withCalendarsReady(busyTimes) };

const registry: Partial<Record<Provider, FreeBusyProvider>> = {
  agent: { busy: busyTimes },
  imap: calDavBusy,
  icloud: calDavBusy,
  yahoo: calDavBusy,
  google: googleFreeBusy,
  microsoft: graphFreeBusy,
};

export const freeBusyOf = (grant: GrantRecord) => providerOf(registry, grant, 'Free/busy');
