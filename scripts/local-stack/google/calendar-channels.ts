/**
 * Watch channels in the local Google Calendar fake: events.watch records a channel (its address checked
 * as Google checks it, its expiry and resource id as Google gives them) and channels.stop ends it.
 * Their notifications are sent by calendar-push.ts.
 */

import { createHash } from 'node:crypto';
import { notFound } from './errors';
import { bad, compact, required, type RecordedChannel } from './calendar-resources';
import { DAY_MS } from './recurrence';
import { access, empty, ok, type CalendarAnswer, type CalendarCall } from './calendar-state';

const WEEK_MS = 7 * DAY_MS;

interface ChannelBody {
  id?: string;
  token?: string;
  type?: string;
  address?: string;
  expiration?: string;
  params?: Record<string, string>;
  resourceId?: string;
}

/** Google takes HTTPS addresses only; the fake also takes plain HTTP on loopback, for local receivers. */
function checkAddress(address: string | undefined): string {
  if (!address) throw required('Missing channel address.');
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw bad(`Invalid channel address: ${address}`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
    throw bad(`WebHook callback must be HTTPS: ${address}`, 'push.webhookUrlNotHttps');
  return address;
}

export function watchEvents(call: CalendarCall): CalendarAnswer {
  const { calendar } = access(call, call.params.calendarId!, 'read');
  const body = (call.body ?? {}) as ChannelBody;
  if (!body.id) throw required('Missing channel id.');
  if (body.type !== 'web_hook' && body.type !== 'webhook') throw bad(`Unknown channel type: ${body.type ?? ''}`);
  const address = checkAddress(body.address);
  if (call.state.channels.has(body.id)) throw bad(`Channel id ${body.id} not unique`, 'channelIdNotUnique');
  const ttl = Number(body.params?.ttl ?? 0);
  const expiration = body.expiration ? Number(body.expiration) : call.state.now + (ttl > 0 ? ttl * 1000 : WEEK_MS);
  // The resource watched: the same id for every channel on this calendar's events.
  const resourceId = createHash('sha256').update(`events ${calendar.id}`).digest('base64url').slice(0, 27);
  const channel: RecordedChannel = {
    id: body.id,
    resourceId,
    resourceUri: `https://www.googleapis.com/calendar/v3/calendars/${encodeURIComponent(calendar.id)}/events?alt=json`,
    calendarId: calendar.id,
    address,
    type: body.type,
    ...(body.token !== undefined ? { token: body.token } : {}),
    ...(body.params ? { params: { ...body.params } } : {}),
    expiration,
    email: call.account.email,
  };
  call.state.channels.set(channel.id, channel);
  return ok(
    compact({
      kind: 'api#channel',
      id: channel.id,
      resourceId,
      resourceUri: channel.resourceUri,
      token: channel.token,
      expiration: String(expiration),
    }),
  );
}

export function stopChannel(call: CalendarCall): CalendarAnswer {
  const body = (call.body ?? {}) as ChannelBody;
  if (!body.id || !body.resourceId) throw required('Missing channel id or resourceId.');
  const channel = call.state.channels.get(body.id);
  if (!channel || channel.resourceId !== body.resourceId) throw notFound();
  call.state.channels.delete(body.id);
  return empty;
}
