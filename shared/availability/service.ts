import type { AvailabilityBody, FreeBusyBody, OpenHoursObject } from '#schemas/availability';
import type { ApplicationContext } from '#shared/caller';
import {
  computeAvailability,
  fiveMinuteProblem,
  normalize,
  openHoursProblems,
  type AvailabilityMethod,
  type EngineParticipant,
  type EngineResult,
} from '#shared/availability/engine';
import type { GrantRecord } from '#shared/db/grants';
import { ApiError, InvalidRequestError } from '#shared/errors';
import { grantNamed } from '#shared/grants/resolve';
import { freeBusyOf } from '#shared/registries/free-busy';

/**
 * Free/busy and availability over the grants of one application: participants are resolved within
 * the calling application only, each one's calendars are read with one window query per calendar
 * (FreeBusyProvider), and the slots come from the pure engine.
 */

export const MAX_AVAILABILITY_DAYS = 60;
/** Free/busy may look further than availability: as far as one recurrence expansion goes. */
export const MAX_FREE_BUSY_DAYS = 366;
const DAY = 86_400;

const lower = (s: string) => s.trim().toLowerCase();

function checkWindow(start: number, end: number, maxDays: number): void {
  if (end <= start) throw new InvalidRequestError(`'end_time' (${end}) must be after 'start_time' (${start})`);
  if (end - start > maxDays * DAY)
    throw new InvalidRequestError(
      `'start_time' to 'end_time' spans more than ${maxDays} days (the limit); ask for a shorter window`,
    );
}

// ---- free/busy -------------------------------------------------------------------------------

export type FreeBusyEntry =
  | {
      email: string;
      object: 'free_busy';
      time_slots: { start_time: number; end_time: number; status: 'busy'; object: 'time_slot' }[];
    }
  | { email: string; object: 'error'; error: string };

/** One entry per address asked for (each once, in the order given): its busy time, merged and clipped to the window, or why not. */
export async function freeBusy(app: ApplicationContext, body: FreeBusyBody): Promise<FreeBusyEntry[]> {
  checkWindow(body.start_time, body.end_time, MAX_FREE_BUSY_DAYS);
  const emails = [...new Map(body.emails.map((e) => [lower(e), e.trim()])).values()];
  return Promise.all(
    emails.map(async (email): Promise<FreeBusyEntry> => {
      const grant = await grantNamed(app, email);
      if (!grant)
        return { email, object: 'error', error: `'${email}' is not the address of a grant of this application` };
      if (grant.blocked) return { email, object: 'error', error: `The grant of '${email}' is blocked` };
      try {
        const { busy } = await freeBusyOf(grant).busy(grant, {
          calendar_ids: ['primary'],
          start: body.start_time,
          end: body.end_time,
          tentative_as_busy: body.tentative_as_busy ?? true,
        });
        const slots = normalize(
          busy.map((b) => ({ start: Math.max(b.start, body.start_time), end: Math.min(b.end, body.end_time) })),
        );
        return {
          email,
          object: 'free_busy',
          time_slots: slots.map((s) => ({ start_time: s.start, end_time: s.end, status: 'busy', object: 'time_slot' })),
        };
      } catch (error) {
        if (error instanceof ApiError && error.status < 500) return { email, object: 'error', error: error.message };
        throw error;
      }
    }),
  );
}

// ---- availability ----------------------------------------------------------------------------

export interface ResolvedParticipant {
  email: string;
  grant: GrantRecord;
  calendar_ids?: readonly string[] | undefined;
  open_hours?: readonly OpenHoursObject[] | undefined;
}

export interface AvailabilityRequest<P = ResolvedParticipant> {
  start_time: number;
  end_time: number;
  duration_minutes: number;
  interval_minutes?: number | undefined;
  round_to?: number | undefined;
  participants: readonly P[];
  method: AvailabilityMethod;
  buffer?: { before?: number | undefined; after?: number | undefined } | undefined;
  default_open_hours?: readonly OpenHoursObject[] | undefined;
  round_robin_group_id?: string | undefined;
  tentative_as_busy?: boolean | undefined;
  /** Busy intervals to treat as free (a booking being moved does not block its own new time). */
  free?: readonly { email: string; start: number; end: number }[] | undefined;
}

const multipleOf5 = (field: string, value: number | undefined) => {
  const problem = fiveMinuteProblem(field, value);
  if (problem) throw new InvalidRequestError(problem);
};

/** Checks what the schema cannot say (400 naming the field and the limit). */
export function checkAvailabilityRequest(
  request: AvailabilityRequest<{ email: string; open_hours?: readonly OpenHoursObject[] | undefined }>,
): void {
  checkWindow(request.start_time, request.end_time, MAX_AVAILABILITY_DAYS);
  multipleOf5('duration_minutes', request.duration_minutes);
  multipleOf5('interval_minutes', request.interval_minutes);
  multipleOf5('round_to', request.round_to);
  multipleOf5('availability_rules.buffer.before', request.buffer?.before);
  multipleOf5('availability_rules.buffer.after', request.buffer?.after);
  if (request.duration_minutes * 60 > request.end_time - request.start_time) {
    throw new InvalidRequestError(
      `'duration_minutes' (${request.duration_minutes}) is longer than the window from 'start_time' to 'end_time'`,
    );
  }
  const problems: string[] = [];
  (request.default_open_hours ?? []).forEach((h, i) =>
    problems.push(...openHoursProblems(h, `availability_rules.default_open_hours[${i}]`)),
  );
  const seen = new Map<string, number>();
  request.participants.forEach((p, i) => {
    (p.open_hours ?? []).forEach((h, j) =>
      problems.push(...openHoursProblems(h, `participants[${i}].open_hours[${j}]`)),
    );
    const previous = seen.get(lower(p.email));
    if (previous !== undefined) problems.push(`participants[${i}] repeats '${p.email}' (participants[${previous}])`);
    else seen.set(lower(p.email), i);
  });
  if (problems.length) throw new InvalidRequestError(problems.join('; '));
}

/**
 * Slots for participants whose grants are already resolved (the scheduler resolves its own):
 * busy time is read for the window widened by the buffers, one query per calendar.
 */
export async function availabilityOf(request: AvailabilityRequest): Promise<EngineResult> {
  const before = (request.buffer?.before ?? 0) * 60;
  const after = (request.buffer?.after ?? 0) * 60;
  const roundRobin = request.method !== 'collective';
  const participants = await Promise.all(
    request.participants.map(async (p, i): Promise<EngineParticipant> => {
      try {
        const times = await freeBusyOf(p.grant).busy(p.grant, {
          calendar_ids: p.calendar_ids?.length ? p.calendar_ids : ['primary'],
          start: request.start_time - after,
          end: request.end_time + before,
          tentative_as_busy: request.tentative_as_busy ?? true,
          ...(roundRobin ? { fairness_group: request.round_robin_group_id ?? null } : {}),
        });
        let busy = times.busy;
        for (const f of request.free ?? []) {
          if (f.email.toLowerCase() !== p.email.toLowerCase()) continue;
          const at = busy.findIndex((b) => b.start === f.start && b.end === f.end);
          if (at >= 0) busy = [...busy.slice(0, at), ...busy.slice(at + 1)];
        }
        return { email: p.email, busy, open_hours: p.open_hours, fairness_count: times.fairness_count };
      } catch (error) {
        if (error instanceof ApiError && error.status < 500)
          throw new InvalidRequestError(`participants[${i}] (${p.email}): ${error.message}`);
        throw error;
      }
    }),
  );
  return computeAvailability({
    start: request.start_time,
    end: request.end_time,
    duration_minutes: request.duration_minutes,
    interval_minutes: request.interval_minutes ?? request.duration_minutes,
    round_to: request.round_to ?? 15,
    method: request.method,
    buffer: request.buffer,
    default_open_hours: request.default_open_hours,
    participants,
  });
}

/** `POST /v3/calendars/availability`: participants must be grants of the calling application (400 naming the others). */
export async function availability(app: ApplicationContext, body: AvailabilityBody): Promise<EngineResult> {
  const rules: NonNullable<AvailabilityBody['availability_rules']> = body.availability_rules ?? {};
  const request = {
    start_time: body.start_time,
    end_time: body.end_time,
    duration_minutes: body.duration_minutes,
    interval_minutes: body.interval_minutes,
    round_to: body.round_to,
    method: rules.availability_method ?? 'max-availability',
    buffer: rules.buffer,
    default_open_hours: rules.default_open_hours,
    round_robin_group_id: rules.round_robin_group_id,
    tentative_as_busy: rules.tentative_as_busy,
  };
  checkAvailabilityRequest({ ...request, participants: body.participants });
  const grants = await Promise.all(body.participants.map((p) => grantNamed(app, p.email, p.grant_id)));
  const unknown = body.participants.filter((_, i) => !grants[i] || grants[i]!.blocked).map((p) => p.email);
  if (unknown.length) {
    throw new InvalidRequestError(
      `Participants must be grants of this application that are not blocked; these are not: ${unknown.join(', ')}`,
    );
  }
  return availabilityOf({ ...request, participants: body.participants.map((p, i) => ({ ...p, grant: grants[i]! })) });
}
