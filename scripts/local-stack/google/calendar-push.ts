import type { CalendarState } from './calendar-state';

/**
 * Calendar watch channels' notifications, played locally: as Google does, a channel gets a `sync`
 * notification once it exists, then an `exists` notification after each change of its calendar's
 * events (the fake looks every POLL_MS), POSTed to the channel's address with the X-Goog-* headers
 * and no body. Every attempt is kept; a channel past its expiration or stopped gets nothing more.
 */

export interface ChannelPushAttempt {
  channelId: string;
  calendarId: string;
  state: 'sync' | 'exists';
  status: number | 'unreachable';
  at: number;
}

const POLL_MS = 25;

export function startChannelPushes(calendars: CalendarState, now: () => number, signal: AbortSignal) {
  const attempts: ChannelPushAttempt[] = [];
  const seen = new Map<string, { seq: number; number: number }>();
  const pending = new Set<Promise<void>>();

  async function send(channelId: string, state: 'sync' | 'exists', messageNumber: number): Promise<void> {
    const channel = calendars.channels.get(channelId);
    if (!channel) return;
    let status: ChannelPushAttempt['status'];
    try {
      const answer = await fetch(channel.address, {
        method: 'POST',
        headers: {
          'x-goog-channel-id': channel.id,
          ...(channel.token !== undefined ? { 'x-goog-channel-token': channel.token } : {}),
          'x-goog-channel-expiration': new Date(channel.expiration).toUTCString(),
          'x-goog-resource-id': channel.resourceId,
          'x-goog-resource-uri': channel.resourceUri,
          'x-goog-resource-state': state,
          'x-goog-message-number': String(messageNumber),
        },
        signal,
      });
      await answer.arrayBuffer();
      status = answer.status;
    } catch {
      status = 'unreachable';
    }
    attempts.push({ channelId, calendarId: channel.calendarId, state, status, at: now() });
  }

  const timer = setInterval(() => {
    for (const channel of calendars.channels.values()) {
      if (channel.expiration < now()) continue;
      const calendar = calendars.calendars.get(channel.calendarId);
      if (!calendar) continue;
      const last = seen.get(channel.id);
      if (last && last.seq === calendar.seq) continue;
      const number = (last?.number ?? 0) + 1;
      seen.set(channel.id, { seq: calendar.seq, number });
      const push = send(channel.id, last ? 'exists' : 'sync', number).finally(() => pending.delete(push));
      pending.add(push);
    }
  }, POLL_MS);
  timer.unref();
  signal.addEventListener('abort', () => clearInterval(timer));

  return {
    attempts,
    async settled(): Promise<void> {
      while (pending.size) await Promise.all([...pending]);
    },
  };
}
