import { createHash } from 'node:crypto';
import { GoogleApiError, invalid } from './errors';

/**
 * The Admin SDK Directory API's calendar resources (rooms and other bookable things) of the fake's
 * one Workspace customer, which every user of the fake belongs to: `resources.calendars.list` for
 * `my_customer` (or the customer's ID), paged, with the `query` clauses `field=value` on
 * `resourceCategory` and `buildingId` joined by AND (Google takes more; the fake refuses the rest as
 * not done). Seeded with three conference rooms and one other resource; tests add more with `add`.
 */

export const CUSTOMER_ID = 'C03fake01';

export interface CalendarResource {
  kind: 'admin#directory#resources#calendars#CalendarResource';
  etags: string;
  resourceId: string;
  resourceName: string;
  generatedResourceName: string;
  resourceEmail: string;
  resourceCategory: 'CONFERENCE_ROOM' | 'OTHER';
  resourceType?: string;
  capacity?: number;
  buildingId?: string;
  floorName?: string;
  floorSection?: string;
  userVisibleDescription?: string;
}

export type NewCalendarResource = Pick<CalendarResource, 'resourceId' | 'resourceName'> &
  Partial<
    Pick<
      CalendarResource,
      | 'resourceCategory'
      | 'resourceType'
      | 'capacity'
      | 'buildingId'
      | 'floorName'
      | 'floorSection'
      | 'userVisibleDescription'
    >
  >;

const SEEDED: NewCalendarResource[] = [
  {
    resourceId: 'room-harbour',
    resourceName: 'Harbour',
    capacity: 8,
    buildingId: 'HQ',
    floorName: '2',
    floorSection: 'East',
  },
  { resourceId: 'room-lighthouse', resourceName: 'Lighthouse', capacity: 4, buildingId: 'HQ', floorName: 'Mezzanine' },
  { resourceId: 'room-dock', resourceName: 'Dock', capacity: 20, buildingId: 'Annex', floorName: '0' },
  { resourceId: 'projector-1', resourceName: 'Projector 1', resourceCategory: 'OTHER', resourceType: 'Projector' },
];

/** Google's resource addresses: `c_<digits>@resource.calendar.google.com`. */
const emailOf = (resourceId: string) =>
  `c_${BigInt(`0x${createHash('sha256').update(resourceId).digest('hex').slice(0, 15)}`)}@resource.calendar.google.com`;

const FILTERABLE = new Set(['resourceCategory', 'buildingId']);

export class DirectoryState {
  private resources: CalendarResource[] = [];
  /** Users who may not read the directory (not administrators with the calendar resources privilege). */
  private readonly notAdmins = new Set<string>();

  constructor() {
    this.reset();
  }

  add(resource: NewCalendarResource): CalendarResource {
    if (this.resources.some((r) => r.resourceId === resource.resourceId))
      throw new Error(`the Google fake already has the calendar resource '${resource.resourceId}'`);
    const category = resource.resourceCategory ?? 'CONFERENCE_ROOM';
    const generated = [resource.buildingId, resource.floorName, resource.resourceName].filter(Boolean).join('-');
    const added: CalendarResource = {
      kind: 'admin#directory#resources#calendars#CalendarResource',
      etags: `"${createHash('sha256').update(JSON.stringify(resource)).digest('base64url').slice(0, 27)}"`,
      ...resource,
      resourceCategory: category,
      resourceEmail: emailOf(resource.resourceId),
      generatedResourceName: resource.capacity !== undefined ? `${generated} (${resource.capacity})` : generated,
    };
    this.resources.push(added);
    return added;
  }

  /** Whether `email` may read the directory's calendar resources (every user may, until told otherwise). */
  setAdmin(email: string, admin: boolean): void {
    if (admin) this.notAdmins.delete(email.toLowerCase());
    else this.notAdmins.add(email.toLowerCase());
  }

  reset(): void {
    this.notAdmins.clear();
    this.resources = [];
    for (const r of SEEDED) this.add(r);
  }

  /** `resources.calendars.list`: in resourceId order, `maxResults` at a time (Google's default is 100). */
  list(caller: string, customer: string, query: URLSearchParams) {
    // Google's answer to a user without the privilege, as to another customer's ID.
    if ((customer !== 'my_customer' && customer !== CUSTOMER_ID) || this.notAdmins.has(caller.toLowerCase()))
      throw new GoogleApiError(403, 'Not Authorized to access this resource/api', 'forbidden');
    if (query.has('orderBy')) throw invalid('Invalid Input: orderBy (the local fake lists in resourceId order only)');
    const clauses = (query.get('query') ?? '')
      .split(/\s+AND\s+/)
      .filter(Boolean)
      .map((clause) => {
        const m = /^(\w+)=(.+)$/.exec(clause.trim());
        if (!m || !FILTERABLE.has(m[1]!))
          throw invalid(
            `Invalid Input: query clause '${clause}' (the local fake takes resourceCategory= and buildingId=)`,
          );
        return [m[1]! as 'resourceCategory' | 'buildingId', m[2]!] as const;
      });
    const matching = this.resources
      .filter((r) => clauses.every(([field, value]) => r[field] === value))
      .sort((a, b) => (a.resourceId < b.resourceId ? -1 : 1));
    const max = Number(query.get('maxResults') ?? 100);
    const token = query.get('pageToken');
    const offset =
      token === null
        ? 0
        : Number(
            Buffer.from(token, 'base64url')
              .toString('utf8')
              .replace(/^offset:/, ''),
          );
    if (!Number.isInteger(offset) || offset < 0 || offset > matching.length) throw invalid('Invalid Input: pageToken');
    const items = matching.slice(offset, offset + max);
    const next =
      offset + max < matching.length ? Buffer.from(`offset:${offset + max}`).toString('base64url') : undefined;
    return {
      kind: 'admin#directory#resources#calendars#calendarResourcesList',
      etag: `"${createHash('sha256')
        .update(items.map((r) => r.etags).join())
        .digest('base64url')
        .slice(0, 27)}"`,
      items,
      ...(next ? { nextPageToken: next } : {}),
    };
  }
}

/** The Directory methods the fake serves, by discovery id. */
export const DIRECTORY_HANDLERS: Record<
  string,
  (call: { state: DirectoryState; caller: string; params: Record<string, string>; query: URLSearchParams }) => {
    status: number;
    body?: unknown;
  }
> = {
  'directory.resources.calendars.list': ({ state, caller, params, query }) => ({
    status: 200,
    body: state.list(caller, params.customer!, query),
  }),
};
