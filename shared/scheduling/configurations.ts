import type { CreateConfigurationBody, UpdateConfigurationBody } from '#schemas/scheduling';
import type { ApplicationContext } from '#shared/caller';
import { fiveMinuteProblem, openHoursProblems, zoneProblem } from '#shared/availability/engine';
import * as db from '#shared/db/scheduling';
import type { ConfigurationRecord } from '#shared/db/scheduling';
import type { GrantRecord } from '#shared/db/grants';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId } from '#shared/ids';
import { clock } from '#shared/time';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import { pageSize } from '#shared/answer-limits';
import { env } from '#shared/config';
import { grantNamed } from '#shared/grants/resolve';
import { configurationLinks, linkProblem } from '#shared/scheduling/urls';
import { booksOnPrimaryOnly } from '#shared/providers/organizer-calendars';
import { listGroupEvents } from '#shared/db/group-events';

/**
 * Scheduler configurations: what a booking page offers (participants and their calendars, slot
 * rules, the event a booking creates, booking-page settings). The organizer is the grant that owns
 * the configuration; Agent Account organizers read and write their primary calendar only, and
 * round-robin methods are refused for them (spec "Scheduler configuration"). Every participant is
 * a grant of the organizer's application; slugs are unique across applications; stored links are
 * https (http to loopback in local mode).
 */
const LINK_POLICY = { local: env.webhookLocalMode() };

export const DEFAULTS = {
  available_days_in_future: 30,
  min_booking_notice: 60,
  min_cancellation_notice: 0,
  round_to: 15,
  method: 'collective',
} as const;

const lower = (s: string) => s.trim().toLowerCase();
const multipleOf5 = (problems: string[], field: string, value: number | undefined) => {
  const problem = fiveMinuteProblem(field, value);
  if (problem) problems.push(problem);
};

type Fields = Omit<CreateConfigurationBody, 'participants' | 'availability' | 'event_booking'> &
  Partial<Pick<CreateConfigurationBody, 'participants' | 'availability' | 'event_booking'>>;

/** Checks a whole configuration (after an update is merged in) for its organizer: 400 naming every problem. */
function check(
  organizer: GrantRecord,
  c: Required<Pick<CreateConfigurationBody, 'participants' | 'availability' | 'event_booking'>> & Fields,
): string[] {
  const problems: string[] = [];
  const organizers = c.participants.filter((p) => p.is_organizer === true);
  if (organizers.length > 1)
    problems.push(
      `only one participant can be the organizer; ${organizers.map((p) => p.email).join(', ')} are marked is_organizer`,
    );
  const organizerEntry = organizers[0] ?? c.participants.find((p) => lower(p.email) === lower(organizer.email));
  if (!organizerEntry)
    problems.push(`the organizer must be a participant: add ${organizer.email} with "is_organizer": true`);
  else if (lower(organizerEntry.email) !== lower(organizer.email))
    problems.push(`the organizer (${organizerEntry.email}) must be the configuration's grant, ${organizer.email}`);
  const seen = new Set<string>();
  c.participants.forEach((p, i) => {
    if (seen.has(lower(p.email))) problems.push(`participants[${i}] repeats ${p.email}`);
    seen.add(lower(p.email));
    (p.availability?.open_hours ?? []).forEach((h, j) =>
      problems.push(...openHoursProblems(h, `participants[${i}].availability.open_hours[${j}]`)),
    );
    if (p.timezone !== undefined) tryZone(problems, `participants[${i}].timezone`, p.timezone);
  });
  (c.availability.availability_rules?.default_open_hours ?? []).forEach((h, j) =>
    problems.push(...openHoursProblems(h, `availability.availability_rules.default_open_hours[${j}]`)),
  );
  multipleOf5(problems, 'availability.duration_minutes', c.availability.duration_minutes);
  multipleOf5(problems, 'availability.interval_minutes', c.availability.interval_minutes);
  multipleOf5(problems, 'availability.round_to', c.availability.round_to);
  multipleOf5(
    problems,
    'availability.availability_rules.buffer.before',
    c.availability.availability_rules?.buffer?.before,
  );
  multipleOf5(
    problems,
    'availability.availability_rules.buffer.after',
    c.availability.availability_rules?.buffer?.after,
  );
  if (c.type === 'group' && c.event_booking.booking_type === 'organizer-confirmation')
    problems.push(
      "a group configuration books seats at once: 'event_booking.booking_type' must be 'booking' (organizer confirmation is not offered for group events)",
    );
  if (c.event_booking.timezone !== undefined) tryZone(problems, 'event_booking.timezone', c.event_booking.timezone);
  for (const [field, url] of configurationLinks(c)) {
    const problem = linkProblem(field, url, LINK_POLICY);
    if (problem) problems.push(problem);
  }
  if (c.event_booking.conferencing?.autocreate !== undefined)
    problems.push(
      "'event_booking.conferencing.autocreate' needs a conferencing provider, and none is configured in this deployment; give 'details' instead",
    );
  if (booksOnPrimaryOnly(organizer) && organizerEntry) {
    const calendars = organizerEntry.availability?.calendar_ids;
    if (calendars && (calendars.length !== 1 || calendars[0] !== 'primary')) {
      problems.push(
        `an Agent Account organizer reads its primary calendar only: 'availability.calendar_ids' must be ["primary"], not ${JSON.stringify(calendars)}`,
      );
    }
    if (organizerEntry.booking && organizerEntry.booking.calendar_id !== 'primary') {
      problems.push(
        `an Agent Account organizer books on its primary calendar only: 'booking.calendar_id' must be "primary", not "${organizerEntry.booking.calendar_id}"`,
      );
    }
    const method = c.availability.availability_rules?.availability_method;
    if (method === 'max-availability' || method === 'max-fairness') {
      problems.push(
        `round-robin availability ('${method}') is not supported for Agent Account organizers: use 'collective' (every participant must be free)`,
      );
    }
  }
  return problems;
}

/**
 * Participants must be grants the saving request can reach (their calendars decide availability and
 * bookings invite them): with the API key, grants of the application; with an access token, its own
 * grant only, and the answer never tells whether another address is a grant. One problem naming
 * every participant that is not.
 */
async function participantProblems(
  caller: ApplicationContext,
  organizer: GrantRecord,
  participants: readonly { email: string; grant_id?: string }[],
): Promise<string[]> {
  const unknown = (
    await Promise.all(
      participants.map(async (p) => {
        if (lower(p.email) === lower(organizer.email) && (p.grant_id === undefined || p.grant_id === organizer.id))
          return undefined;
        return (await grantNamed(caller, p.email, p.grant_id)) ? undefined : p.email;
      }),
    )
  ).filter((email): email is string => email !== undefined);
  if (!unknown.length) return [];
  if (caller.credential === 'access_token') {
    return [
      `with an access token, the only participant can be the token's own grant (${organizer.email}); name other participants with the application's API key. These are not the token's grant: ${unknown.join(', ')}`,
    ];
  }
  return [`every participant must be a grant of this application; these are not: ${unknown.join(', ')}`];
}

function tryZone(problems: string[], field: string, zone: string) {
  const problem = zoneProblem(`'${field}'`, zone);
  if (problem) problems.push(problem);
}

export function configurationView(r: ConfigurationRecord) {
  return {
    id: r.id,
    object: 'scheduling_configuration' as const,
    grant_id: r.grant_id,
    ...(r.name !== undefined ? { name: r.name } : {}),
    ...(r.type !== undefined ? { type: r.type } : {}),
    slug: r.slug ?? null,
    requires_session_auth: r.requires_session_auth,
    participants: r.participants,
    availability: r.availability,
    event_booking: r.event_booking,
    scheduler: r.scheduler,
    ...(r.appearance ? { appearance: r.appearance } : {}),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

async function saved<T>(write: () => Promise<T>, slug: string | undefined): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof db.SlugTakenError) {
      throw new ConflictError(
        `The slug '${slug}' is already used by another configuration (slugs are unique across all applications: they name booking pages); choose another slug`,
      );
    }
    throw error;
  }
}

/** `caller`: who saves it; the configuration reads no more than the caller could (shared/scheduling/access.ts, authorityOf). */
export async function createConfiguration(
  caller: ApplicationContext,
  organizer: GrantRecord,
  body: CreateConfigurationBody,
) {
  const problems = [...check(organizer, body), ...(await participantProblems(caller, organizer, body.participants))];
  if (problems.length) throw new InvalidRequestError(problems.join('; '));
  const now = clock.nowSeconds();
  const { slug, requires_session_auth, scheduler, ...fields } = body;
  const record: ConfigurationRecord = {
    ...fields,
    id: newId('configuration'),
    application_id: organizer.application_id,
    grant_id: organizer.id,
    ...(slug !== undefined ? { slug } : {}),
    requires_session_auth: requires_session_auth ?? false,
    saved_with: caller.credential,
    scheduler: scheduler ?? {},
    created_at: now,
    updated_at: now,
    version: 1,
  };
  await saved(() => db.insertConfiguration(record), slug);
  return configurationView(record);
}

/** The configuration, if it belongs to this application (and, when given, this organizer); 404 otherwise. */
export async function requireConfiguration(
  appId: ApplicationContext['applicationId'],
  id: string,
  organizer?: GrantRecord,
): Promise<ConfigurationRecord> {
  const parsed = parseId('configuration', id);
  const record = parsed ? await db.getConfiguration(parsed) : undefined;
  if (!record || record.application_id !== appId || (organizer && record.grant_id !== organizer.id))
    throw new NotFoundError(`Configuration '${id}' not found`);
  return record;
}

/** The participants are checked again with the caller's authority, which the configuration keeps from now on. */
export async function updateConfiguration(
  caller: ApplicationContext,
  organizer: GrantRecord,
  current: ConfigurationRecord,
  body: UpdateConfigurationBody,
) {
  if (body.type !== undefined && (body.type || undefined) !== (current.type || undefined))
    throw new InvalidRequestError(
      `'type' is set when a configuration is created and cannot change (it is ${current.type ? `"${current.type}"` : 'not set'} here); create a new configuration instead`,
    );
  const merged = {
    ...current,
    ...body,
    scheduler: body.scheduler ?? current.scheduler,
    saved_with: caller.credential,
  };
  const problems = [
    ...check(organizer, merged),
    ...(await participantProblems(caller, organizer, merged.participants)),
  ];
  if (problems.length) throw new InvalidRequestError(problems.join('; '));
  const next: ConfigurationRecord = { ...merged, updated_at: clock.nowSeconds(), version: current.version + 1 };
  const ok = await saved(() => db.replaceConfiguration(current, next), body.slug);
  if (!ok)
    throw new ConflictError(`Configuration '${current.id}' was changed by another request; read it again and retry`);
  return configurationView(next);
}

/** A page of the application's configurations (optionally one organizer's), oldest first. */
export async function listConfigurations(
  app: ApplicationContext,
  query: { limit?: number | undefined; page_token?: string | undefined },
  organizer?: GrantRecord,
) {
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'configurations') : 0;
  const limit = pageSize(query.limit);
  const all = await db.listConfigurations(app.applicationId, organizer?.id);
  return {
    items: all.slice(offset, offset + limit).map(configurationView),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('configurations', offset + limit) : undefined,
  };
}

export async function deleteConfiguration(record: ConfigurationRecord): Promise<void> {
  // A group configuration's group events are events on the organizer's calendar with bookings: they go first, each with its guests told.
  if (record.type === 'group' && (await listGroupEvents(record.id)).some((e) => e.status === 'active'))
    throw new ConflictError(
      `Configuration '${record.id}' still offers group events: delete them first (DELETE …/group-events/{event_id} cancels their bookings)`,
    );
  if (!(await db.deleteConfiguration(record)))
    throw new ConflictError(`Configuration '${record.id}' was changed by another request; read it again and retry`);
}
