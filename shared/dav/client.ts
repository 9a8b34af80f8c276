import type { FetchLike } from '#shared/net/fetch';
import { child, children, escapeXml, NS, parseXml, textOf, xmlBody, XmlSyntaxError, type XmlElement } from './xml';

/**
 * A minimal WebDAV / CalDAV / CardDAV client: discovery of the calendar and address book homes,
 * collections (list, create, change, delete), objects (list, fetch many, put and delete under ETag
 * preconditions) and RFC 6578 sync. Every request goes through the injected fetch: production passes
 * the guarded fetch (no private addresses, no redirects followed), tests the global one. Hrefs are
 * kept as the server gives them (resolved to absolute URLs), never rebuilt from a UID.
 */

export type DavAuth = { type: 'basic'; username: string; password: string } | { type: 'bearer'; token: string };

export interface DavClientOptions {
  fetch: FetchLike;
  auth: DavAuth;
  /** Per request, on top of whatever the fetch enforces itself. Absent: none. */
  timeoutMs?: number;
}

export type DavErrorKind =
  | 'unauthorized'
  | 'not_found'
  | 'precondition_failed'
  | 'not_dav'
  | 'unreachable'
  | 'bad_response'
  | 'conflict'
  | 'sync_token_invalid';

/** Every failure of this client: `kind` says what to do about it, the message names the host and the status. */
export class DavError extends Error {
  override name = 'DavError';
  constructor(
    readonly kind: DavErrorKind,
    message: string,
    readonly url: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A 412 on a conditional PUT or DELETE: the object changed (or exists) on the server; re-read it, never overwrite. */
export class PreconditionFailed extends DavError {
  override name = 'PreconditionFailed';
  constructor(message: string, url: string, status = 412) {
    super('precondition_failed', message, url, status);
  }
}

/** The server no longer knows the sync token (403/409 `valid-sync-token`): fall back to a full listing. */
export class SyncTokenInvalid extends DavError {
  override name = 'SyncTokenInvalid';
  constructor(message: string, url: string, status: number) {
    super('sync_token_invalid', message, url, status);
  }
}

export type DavProtocol = 'caldav' | 'carddav';

export interface DavDiscovery {
  /** The principal URL, when the server named one. */
  principal: string | undefined;
  /** Absolute URLs of the calendar (caldav) or address book (carddav) homes. */
  homes: string[];
}

export interface DavCollection {
  url: string;
  kind: 'calendar' | 'addressbook';
  displayName: string | undefined;
  description: string | undefined;
  /** Calendar components the collection takes (VEVENT, VTODO…); undefined when the server does not say (all). */
  components: string[] | undefined;
  color: string | undefined;
  /** The calendar-timezone property: a VCALENDAR with one VTIMEZONE. */
  timezone: string | undefined;
  /** The TZID of that VTIMEZONE. */
  timezoneId: string | undefined;
  ctag: string | undefined;
  syncToken: string | undefined;
}

export interface DavObjectRef {
  url: string;
  etag: string | undefined;
  contentType?: string | undefined;
}

export interface DavObject {
  url: string;
  etag: string | undefined;
  data: string;
}

export interface SyncResult {
  changed: { url: string; etag: string | undefined }[];
  /** URLs of members removed since the token. */
  deleted: string[];
  token: string;
  /** The server truncated the answer (507 on the collection): call again with `token` for the rest. */
  truncated: boolean;
}

export interface CalendarProps {
  name?: string;
  color?: string;
  description?: string;
  /** A VCALENDAR holding the calendar's VTIMEZONE (CalDAV's calendar-timezone). */
  timezone?: string;
}

export interface AddressBookProps {
  name?: string;
  description?: string;
}

const MAX_REDIRECTS = 3;
/** Hrefs per multiget REPORT: servers cap request sizes, and one huge answer helps nobody. */
const MULTIGET_BATCH = 100;

interface DavResponse {
  url: string;
  status: number;
  headers: Headers;
  body: string;
}

/** One `<response>` of a multistatus: its URL, its own status (if any), and the properties found (200 propstat). */
interface MultiResponse {
  url: string;
  status: number | undefined;
  props: XmlElement[];
  /** Properties whose propstat was not 200, with that status. */
  failed: { prop: XmlElement; status: number }[];
}

interface Multistatus {
  responses: MultiResponse[];
  syncToken: string | undefined;
}

const statusOf = (line: string): number | undefined => {
  const match = /^\s*HTTP\/\d(?:\.\d)?\s+(\d{3})/i.exec(line);
  return match ? Number(match[1]) : undefined;
};

export class DavClient {
  private readonly fetch: FetchLike;
  private readonly authorization: string;
  private readonly timeoutMs: number | undefined;

  constructor(options: DavClientOptions) {
    this.fetch = options.fetch;
    this.timeoutMs = options.timeoutMs;
    this.authorization =
      options.auth.type === 'basic'
        ? `Basic ${Buffer.from(`${options.auth.username}:${options.auth.password}`, 'utf8').toString('base64')}`
        : `Bearer ${options.auth.token}`;
  }

  // -------------------------------------------------------------------------------------------
  // Discovery

  /**
   * The calendar or address book homes reachable from `baseUrl`: a server root (then RFC 6764's
   * /.well-known/caldav or /carddav first), a principal, a home, or a collection (accepted as is:
   * listing it shows the collection itself).
   */
  async discover(baseUrl: string, protocol: DavProtocol): Promise<DavDiscovery> {
    const base = new URL(baseUrl);
    const wellKnown = new URL(`/.well-known/${protocol}`, base).href;
    const candidates = base.pathname === '/' || base.pathname === '' ? [wellKnown, base.href] : [base.href, wellKnown];
    let baseError: DavError | undefined;
    for (const candidate of candidates) {
      try {
        const found = await this.discoverFrom(candidate, protocol);
        if (found) return found;
      } catch (error) {
        // Bad credentials or an unreachable server are the answer; a missing well-known path is not.
        if (!(error instanceof DavError) || error.kind === 'unauthorized' || error.kind === 'unreachable') throw error;
        // What the URL given says explains a failure better than the well-known path's 404.
        if (candidate === base.href) baseError = error;
      }
    }
    throw (
      baseError ??
      new DavError(
        'not_dav',
        `${base.host} answered no ${protocol === 'caldav' ? 'CalDAV calendar' : 'CardDAV address book'} home for ${base.pathname}`,
        base.href,
      )
    );
  }

  private async discoverFrom(url: string, protocol: DavProtocol): Promise<DavDiscovery | undefined> {
    const homeSet = protocol === 'caldav' ? '<c:calendar-home-set/>' : '<card:addressbook-home-set/>';
    const props = `<d:prop><d:current-user-principal/><d:resourcetype/>${homeSet}</d:prop>`;
    const { url: at, response } = await this.propfindOne(url, props, { followRedirects: true });
    const homes = this.homesIn(response, protocol, at);
    if (homes.length)
      return { principal: this.principalIn(response, at) ?? (isPrincipal(response) ? at : undefined), homes };
    const types = resourceTypes(response);
    if (
      (protocol === 'caldav' && types.includes('calendar')) ||
      (protocol === 'carddav' && types.includes('addressbook'))
    )
      return { principal: undefined, homes: [at] };
    const principal = this.principalIn(response, at);
    if (!principal) return undefined;
    const found = await this.propfindOne(principal, `<d:prop>${homeSet}</d:prop>`, { followRedirects: true });
    const fromPrincipal = this.homesIn(found.response, protocol, found.url);
    return fromPrincipal.length ? { principal: found.url, homes: fromPrincipal } : undefined;
  }

  private homesIn(response: MultiResponse, protocol: DavProtocol, base: string): string[] {
    const prop =
      protocol === 'caldav'
        ? findProp(response, NS.CALDAV, 'calendar-home-set')
        : findProp(response, NS.CARDDAV, 'addressbook-home-set');
    return children(prop, NS.DAV, 'href').map((href) => new URL(textOf(href).trim(), base).href);
  }

  private principalIn(response: MultiResponse, base: string): string | undefined {
    const href = child(findProp(response, NS.DAV, 'current-user-principal'), NS.DAV, 'href');
    return href ? new URL(textOf(href).trim(), base).href : undefined;
  }

  /** PROPFIND Depth 0, following redirects (discovery only): the answer for the URL finally reached. */
  private async propfindOne(
    url: string,
    props: string,
    options: { followRedirects?: boolean } = {},
  ): Promise<{ url: string; response: MultiResponse }> {
    const response = await this.request('PROPFIND', url, {
      depth: '0',
      body: xmlBody('d:propfind', props),
      followRedirects: options.followRedirects,
    });
    const multi = this.multistatus(response);
    const own = multi.responses.find((one) => sameResource(one.url, response.url)) ?? multi.responses[0];
    if (!own)
      throw new DavError(
        'bad_response',
        `${host(response.url)} answered a PROPFIND of ${new URL(response.url).pathname} without a response for it`,
        response.url,
        response.status,
      );
    return { url: response.url, response: own };
  }

  // -------------------------------------------------------------------------------------------
  // Collections

  /** The calendars or address books directly under `homeUrl` (and `homeUrl` itself, when it is one). */
  async listCollections(homeUrl: string): Promise<DavCollection[]> {
    const props = [
      '<d:resourcetype/>',
      '<d:displayname/>',
      '<c:supported-calendar-component-set/>',
      '<ical:calendar-color/>',
      '<c:calendar-timezone/>',
      '<c:calendar-description/>',
      '<card:addressbook-description/>',
      '<cs:getctag/>',
      '<d:sync-token/>',
    ].join('');
    const response = await this.request('PROPFIND', homeUrl, {
      depth: '1',
      body: xmlBody('d:propfind', `<d:prop>${props}</d:prop>`),
    });
    const collections: DavCollection[] = [];
    for (const one of this.multistatus(response).responses) {
      const types = resourceTypes(one);
      const kind = types.includes('calendar') ? 'calendar' : types.includes('addressbook') ? 'addressbook' : undefined;
      if (!kind) continue;
      const components = findProp(one, NS.CALDAV, 'supported-calendar-component-set');
      const timezone = optionalText(findProp(one, NS.CALDAV, 'calendar-timezone'));
      collections.push({
        url: one.url,
        kind,
        displayName: optionalText(findProp(one, NS.DAV, 'displayname')),
        description: optionalText(
          findProp(one, NS.CALDAV, 'calendar-description') ?? findProp(one, NS.CARDDAV, 'addressbook-description'),
        ),
        // Radicale answers a component set for address books too: meaningless there.
        components:
          components && kind === 'calendar'
            ? children(components, NS.CALDAV, 'comp').map((comp) => (comp.attributes.name ?? '').toUpperCase())
            : undefined,
        color: optionalText(findProp(one, NS.APPLE, 'calendar-color')),
        timezone,
        timezoneId: timezone
          ? /^TZID[;:](?:.*:)?(.+)$/m.exec(timezone.replace(/\r?\n[ \t]/g, ''))?.[1]?.trim()
          : undefined,
        ctag: optionalText(findProp(one, NS.CS, 'getctag')),
        syncToken: optionalText(findProp(one, NS.DAV, 'sync-token')),
      });
    }
    return collections;
  }

  /** MKCALENDAR for events (component set VEVENT) at `url` (a new collection's URL, under a home). */
  async makeCalendar(url: string, props: CalendarProps = {}): Promise<void> {
    const set = `${calendarProps(props)}<c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set>`;
    const response = await this.request('MKCALENDAR', url, {
      body: xmlBody('c:mkcalendar', `<d:set><d:prop>${set}</d:prop></d:set>`),
    });
    this.expectCreated(response, 'MKCALENDAR');
  }

  /** An address book at `url` by extended MKCOL (RFC 5689), the way CardDAV servers create them. */
  async makeAddressBook(url: string, props: AddressBookProps = {}): Promise<void> {
    const set = `<d:resourcetype><d:collection/><card:addressbook/></d:resourcetype>${addressBookProps(props)}`;
    const response = await this.request('MKCOL', url, {
      body: xmlBody('d:mkcol', `<d:set><d:prop>${set}</d:prop></d:set>`),
    });
    this.expectCreated(response, 'MKCOL');
  }

  /** PROPPATCH a calendar's or address book's name, color, description; a property the server refuses is a `conflict`. */
  async updateCollection(url: string, kind: 'calendar' | 'addressbook', props: CalendarProps): Promise<void> {
    const set = kind === 'calendar' ? calendarProps(props) : addressBookProps(props);
    if (!set) return;
    const response = await this.request('PROPPATCH', url, {
      body: xmlBody('d:propertyupdate', `<d:set><d:prop>${set}</d:prop></d:set>`),
    });
    if (response.status === 200 || response.status === 204) return;
    const refused = this.multistatus(response).responses.flatMap((one) => one.failed);
    if (refused.length) {
      const names = refused.map(({ prop, status }) => `${prop.name} (${status})`).join(', ');
      throw new DavError(
        'conflict',
        `${host(response.url)} refused to change ${names} of ${new URL(url).pathname}`,
        url,
        refused[0]!.status,
      );
    }
  }

  async deleteCollection(url: string): Promise<void> {
    await this.request('DELETE', url);
  }

  // -------------------------------------------------------------------------------------------
  // Objects

  /** The members of a collection with their ETags (Depth 1 PROPFIND), sub-collections left out. */
  async listObjects(collectionUrl: string): Promise<DavObjectRef[]> {
    const response = await this.request('PROPFIND', collectionUrl, {
      depth: '1',
      body: xmlBody('d:propfind', '<d:prop><d:getetag/><d:getcontenttype/><d:resourcetype/></d:prop>'),
    });
    return this.multistatus(response)
      .responses.filter(
        (one) =>
          !sameResource(one.url, response.url) && !child(findProp(one, NS.DAV, 'resourcetype'), NS.DAV, 'collection'),
      )
      .map((one) => ({
        url: one.url,
        etag: optionalText(findProp(one, NS.DAV, 'getetag')),
        contentType: optionalText(findProp(one, NS.DAV, 'getcontenttype')),
      }));
  }

  /**
   * The data of many members at once (calendar-multiget / addressbook-multiget), in batches. Hrefs
   * the server does not have (404) are left out of the answer.
   */
  async multiget(collectionUrl: string, urls: string[], kind: 'calendar' | 'addressbook'): Promise<DavObject[]> {
    const objects: DavObject[] = [];
    const [root, data] =
      kind === 'calendar'
        ? ['c:calendar-multiget', '<c:calendar-data/>']
        : ['card:addressbook-multiget', '<card:address-data/>'];
    for (let i = 0; i < urls.length; i += MULTIGET_BATCH) {
      const hrefs = urls
        .slice(i, i + MULTIGET_BATCH)
        .map((url) => `<d:href>${escapeXml(hrefFor(url, collectionUrl))}</d:href>`)
        .join('');
      const response = await this.request('REPORT', collectionUrl, {
        depth: '1',
        body: xmlBody(root, `<d:prop><d:getetag/>${data}</d:prop>${hrefs}`),
      });
      objects.push(...this.objectsIn(response, kind));
    }
    return objects;
  }

  /** calendar-query for events, optionally only those overlapping [start, end) (UTC instants). */
  async calendarQuery(
    collectionUrl: string,
    options: { start?: Date; end?: Date; component?: string } = {},
  ): Promise<DavObject[]> {
    const range =
      options.start || options.end
        ? `<c:time-range${options.start ? ` start="${icsUtc(options.start)}"` : ''}${options.end ? ` end="${icsUtc(options.end)}"` : ''}/>`
        : '';
    const filter = `<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="${escapeXml(options.component ?? 'VEVENT')}">${range}</c:comp-filter></c:comp-filter></c:filter>`;
    const response = await this.request('REPORT', collectionUrl, {
      depth: '1',
      body: xmlBody('c:calendar-query', `<d:prop><d:getetag/><c:calendar-data/></d:prop>${filter}`),
    });
    return this.objectsIn(response, 'calendar');
  }

  /** One member's data and ETag (GET). */
  async getObject(url: string): Promise<DavObject> {
    const response = await this.request('GET', url);
    if (response.status !== 200) throw this.statusError(response, 'GET');
    return { url: response.url, etag: response.headers.get('etag') ?? undefined, data: response.body };
  }

  /**
   * Creates (`{create: true}`: If-None-Match *) or updates (`{etag}`: If-Match) a member; resolves
   * with its new ETag, from the answer or, when the server sends none (it changed the data), a
   * PROPFIND. A 412 is PreconditionFailed: someone else created or changed it first.
   */
  async putObject(
    url: string,
    data: string,
    contentType: string,
    condition: { create: true } | { etag: string },
  ): Promise<string | undefined> {
    const headers: Record<string, string> = { 'content-type': contentType };
    if ('create' in condition) headers['if-none-match'] = '*';
    else headers['if-match'] = condition.etag;
    const response = await this.request('PUT', url, { headers, rawBody: data });
    if (response.status !== 200 && response.status !== 201 && response.status !== 204)
      throw this.statusError(response, 'PUT');
    const etag = response.headers.get('etag');
    // A weak ETag says the server stored something else than what was sent: not one to send back as If-Match.
    if (etag && !etag.startsWith('W/')) return etag;
    const { response: props } = await this.propfindOne(url, '<d:prop><d:getetag/></d:prop>');
    return optionalText(findProp(props, NS.DAV, 'getetag'));
  }

  /** DELETE a member, only if it is still at `etag` when given; a 412 is PreconditionFailed. */
  async deleteObject(url: string, etag?: string): Promise<void> {
    const response = await this.request('DELETE', url, { headers: etag ? { 'if-match': etag } : {} });
    if (response.status !== 200 && response.status !== 204) throw this.statusError(response, 'DELETE');
  }

  // -------------------------------------------------------------------------------------------
  // Sync

  /**
   * RFC 6578 sync-collection: with no token, every member (the initial sync); with one, what changed
   * and what went since. A token the server no longer knows is SyncTokenInvalid.
   */
  async syncCollection(collectionUrl: string, token?: string): Promise<SyncResult> {
    const body = xmlBody(
      'd:sync-collection',
      `<d:sync-token>${token ? escapeXml(token) : ''}</d:sync-token><d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop>`,
    );
    const response = await this.request('REPORT', collectionUrl, { body, syncToken: token });
    const multi = this.multistatus(response);
    if (!multi.syncToken)
      throw new DavError(
        'bad_response',
        `${host(response.url)} answered a sync-collection REPORT without a sync-token`,
        response.url,
        response.status,
      );
    const result: SyncResult = { changed: [], deleted: [], token: multi.syncToken, truncated: false };
    for (const one of multi.responses) {
      if (sameResource(one.url, response.url)) {
        if (one.status === 507) result.truncated = true;
        continue;
      }
      if (
        one.status === 404 ||
        (one.status === undefined && !one.props.length && one.failed.some((failed) => failed.status === 404))
      )
        result.deleted.push(one.url);
      else result.changed.push({ url: one.url, etag: optionalText(findProp(one, NS.DAV, 'getetag')) });
    }
    return result;
  }

  // -------------------------------------------------------------------------------------------
  // Requests and answers

  private async request(
    method: string,
    url: string,
    options: {
      depth?: string;
      body?: string;
      rawBody?: string;
      headers?: Record<string, string>;
      followRedirects?: boolean;
      syncToken?: string | undefined;
    } = {},
  ): Promise<DavResponse> {
    let current = new URL(url);
    for (let redirects = 0; ; redirects++) {
      const headers: Record<string, string> = { authorization: this.authorization, ...options.headers };
      if (options.depth !== undefined) headers.depth = options.depth;
      if (options.body !== undefined) headers['content-type'] = 'application/xml; charset=utf-8';
      let response: Response;
      try {
        response = await this.fetch(current.href, {
          method,
          headers,
          body: options.body ?? options.rawBody,
          redirect: 'manual',
          ...(this.timeoutMs ? { signal: AbortSignal.timeout(this.timeoutMs) } : {}),
        });
      } catch (error) {
        throw new DavError(
          'unreachable',
          `${current.host} could not be reached (${method} ${current.pathname}): ${(error as Error).message}`,
          current.href,
          undefined,
          { cause: error },
        );
      }
      let body: string;
      try {
        body = await response.text();
      } catch (error) {
        throw new DavError(
          'unreachable',
          `${current.host} broke off its answer to ${method} ${current.pathname}: ${(error as Error).message}`,
          current.href,
          response.status,
          { cause: error },
        );
      }
      const answer: DavResponse = { url: current.href, status: response.status, headers: response.headers, body };
      if (response.status >= 300 && response.status < 400 && response.status !== 304) {
        const location = response.headers.get('location');
        if (!options.followRedirects || !location) throw this.statusError(answer, method);
        const next = new URL(location, current);
        if (next.origin !== current.origin)
          throw new DavError(
            'not_dav',
            `${current.host} redirected ${current.pathname} to another server (${next.host}); use that server's URL instead`,
            current.href,
            response.status,
          );
        if (redirects >= MAX_REDIRECTS)
          throw new DavError(
            'not_dav',
            `${current.host} redirected ${url} more than ${MAX_REDIRECTS} times`,
            current.href,
            response.status,
          );
        current = next;
        continue;
      }
      if (response.status >= 400) {
        if (
          options.syncToken !== undefined &&
          (response.status === 403 || response.status === 409) &&
          hasPrecondition(body, 'valid-sync-token')
        ) {
          throw new SyncTokenInvalid(
            `${current.host} no longer knows the sync token of ${current.pathname} (${response.status}): a full listing is needed`,
            current.href,
            response.status,
          );
        }
        throw this.statusError(answer, method);
      }
      return answer;
    }
  }

  /** The error for an unexpected status, with a message naming the host, the path and the status. */
  private statusError(response: DavResponse, method: string): DavError {
    const { status } = response;
    const where = `${host(response.url)} answered ${status} to ${method} ${new URL(response.url).pathname}`;
    if (status === 401)
      return new DavError(
        'unauthorized',
        `${where}: the username or password (or token) was not accepted`,
        response.url,
        status,
      );
    if (status === 403) {
      // A DAV precondition (an error body) is about the request, not the credentials.
      if (/<([\w-]+:)?error[\s>]/i.test(response.body))
        return new DavError(
          'conflict',
          `${where}: the server refused it (${preconditionName(response.body) ?? 'forbidden'})`,
          response.url,
          status,
        );
      return new DavError('unauthorized', `${where}: this account may not access it`, response.url, status);
    }
    if (status === 404 || status === 410)
      return new DavError('not_found', `${where}: no such resource`, response.url, status);
    if (status === 412)
      return new PreconditionFailed(
        `${where}: it changed on the server (or already exists) since it was read`,
        response.url,
        status,
      );
    const precondition = preconditionName(response.body);
    if (status === 400 || status === 415 || status === 422)
      return new DavError(
        'conflict',
        `${where}: the server refused the request or its data as invalid${precondition ? ` (${precondition})` : ''}`,
        response.url,
        status,
      );
    if (status === 409 || status === 423)
      return new DavError(
        'conflict',
        `${where}: the server refused it${precondition ? ` (${precondition})` : ''}`,
        response.url,
        status,
      );
    if (status === 405 || status === 501)
      return new DavError(
        'not_dav',
        `${where}: the method is not supported there, which is not a CalDAV/CardDAV collection`,
        response.url,
        status,
      );
    if (status >= 300 && status < 400)
      return new DavError('not_dav', `${where}: a redirect where a DAV answer was expected`, response.url, status);
    if (status >= 500) return new DavError('unreachable', `${where}: the server failed`, response.url, status);
    return new DavError('bad_response', `${where}: unexpected status`, response.url, status);
  }

  private expectCreated(response: DavResponse, method: string): void {
    if (response.status !== 201 && response.status !== 200 && response.status !== 204)
      throw this.statusError(response, method);
  }

  /** A 207 answer parsed; a 2xx that is not a multistatus (an HTML page, say) means the server is no DAV server. */
  private multistatus(response: DavResponse): Multistatus {
    const where = `${host(response.url)} (${new URL(response.url).pathname})`;
    const type = response.headers.get('content-type') ?? '';
    if (response.status !== 207 || /html/i.test(type) || /^\s*<(!doctype\s+html|html)/i.test(response.body)) {
      const dav = response.headers.get('dav') ? '' : ', and says no DAV support';
      throw new DavError(
        'not_dav',
        `${where} answered ${response.status} ${type.split(';')[0] || 'without a content type'} instead of a WebDAV multistatus${dav}: not a CalDAV/CardDAV server URL`,
        response.url,
        response.status,
      );
    }
    let root: XmlElement;
    try {
      root = parseXml(response.body);
    } catch (error) {
      if (!(error instanceof XmlSyntaxError)) throw error;
      throw new DavError(
        'bad_response',
        `${where} answered malformed XML: ${error.message}`,
        response.url,
        response.status,
        { cause: error },
      );
    }
    if (root.ns !== NS.DAV || root.name !== 'multistatus')
      throw new DavError(
        'bad_response',
        `${where} answered <${root.name}> where a WebDAV multistatus was expected`,
        response.url,
        response.status,
      );
    const responses: MultiResponse[] = [];
    for (const one of children(root, NS.DAV, 'response')) {
      const href = child(one, NS.DAV, 'href');
      if (!href) continue;
      let url: string;
      try {
        url = new URL(textOf(href).trim(), response.url).href;
      } catch {
        throw new DavError(
          'bad_response',
          `${where} answered an unusable href ${JSON.stringify(textOf(href))}`,
          response.url,
          response.status,
        );
      }
      const own = child(one, NS.DAV, 'status');
      const entry: MultiResponse = { url, status: own ? statusOf(textOf(own)) : undefined, props: [], failed: [] };
      for (const propstat of children(one, NS.DAV, 'propstat')) {
        const status = statusOf(textOf(child(propstat, NS.DAV, 'status'))) ?? 200;
        for (const prop of child(propstat, NS.DAV, 'prop')?.children ?? []) {
          if (status >= 200 && status < 300) entry.props.push(prop);
          else entry.failed.push({ prop, status });
        }
      }
      responses.push(entry);
    }
    return { responses, syncToken: optionalText(child(root, NS.DAV, 'sync-token')) };
  }

  private objectsIn(response: DavResponse, kind: 'calendar' | 'addressbook'): DavObject[] {
    const [ns, name] = kind === 'calendar' ? [NS.CALDAV, 'calendar-data'] : [NS.CARDDAV, 'address-data'];
    return this.multistatus(response)
      .responses.filter((one) => one.status === undefined || (one.status >= 200 && one.status < 300))
      .flatMap((one) => {
        const data = findProp(one, ns, name);
        // XML parsing turns CRLF into LF (XML end-of-line handling); iCalendar and vCard lines end in CRLF.
        return data
          ? [
              {
                url: one.url,
                etag: optionalText(findProp(one, NS.DAV, 'getetag')),
                data: textOf(data).replace(/\r?\n/g, '\r\n'),
              },
            ]
          : [];
      });
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

function findProp(response: MultiResponse, ns: string, name: string): XmlElement | undefined {
  return response.props.find((prop) => prop.ns === ns && prop.name === name);
}

function optionalText(element: XmlElement | undefined): string | undefined {
  if (!element) return undefined;
  const text = textOf(element).trim();
  return text === '' ? undefined : text;
}

function resourceTypes(response: MultiResponse): string[] {
  return findProp(response, NS.DAV, 'resourcetype')?.children.map((type) => type.name) ?? [];
}

function isPrincipal(response: MultiResponse): boolean {
  return resourceTypes(response).includes('principal');
}

const host = (url: string) => new URL(url).host;

/** Two URLs for the same resource: same origin, same decoded path up to a trailing slash. */
function sameResource(a: string, b: string): boolean {
  const norm = (value: string) => {
    const url = new URL(value);
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      path = url.pathname;
    }
    return `${url.origin}${path.replace(/\/+$/, '')}`;
  };
  return norm(a) === norm(b);
}

/** What goes in a request's `<href>`: the path for a member on the same server, the full URL otherwise. */
function hrefFor(url: string, base: string): string {
  const target = new URL(url, base);
  return target.origin === new URL(base).origin ? `${target.pathname}${target.search}` : target.href;
}

/** Whether an error body names the DAV precondition `name` (any prefix). */
function hasPrecondition(body: string, name: string): boolean {
  return new RegExp(`<([\\w-]+:)?${name}[\\s/>]`).test(body);
}

function preconditionName(body: string): string | undefined {
  try {
    const root = parseXml(body);
    return root.name === 'error' ? root.children[0]?.name : undefined;
  } catch {
    return undefined;
  }
}

/** An instant as CalDAV's time-range wants it: 20260101T100000Z. */
function icsUtc(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function calendarProps(props: CalendarProps): string {
  return [
    props.name !== undefined ? `<d:displayname>${escapeXml(props.name)}</d:displayname>` : '',
    props.color !== undefined ? `<ical:calendar-color>${escapeXml(props.color)}</ical:calendar-color>` : '',
    props.description !== undefined
      ? `<c:calendar-description>${escapeXml(props.description)}</c:calendar-description>`
      : '',
    props.timezone !== undefined ? `<c:calendar-timezone>${escapeXml(props.timezone)}</c:calendar-timezone>` : '',
  ].join('');
}

function addressBookProps(props: AddressBookProps): string {
  return [
    props.name !== undefined ? `<d:displayname>${escapeXml(props.name)}</d:displayname>` : '',
    props.description !== undefined
      ? `<card:addressbook-description>${escapeXml(props.description)}</card:addressbook-description>`
      : '',
  ].join('');
}
