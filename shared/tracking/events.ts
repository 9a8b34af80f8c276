import { NotFoundError } from '#shared/errors';
import { newNotification } from '#shared/notifications/notification';
import { clock } from '#shared/time';
import type { LinkClicked, MessageOpened } from '#schemas/tracking';
import {
  clickedLinksOf,
  countClick,
  countOpen,
  getTrackedMessage,
  ownerOf,
  recordFirstClick,
  recordFirstOpen,
  type TrackedLinkRecord,
  type TrackedMessageRecord,
} from '#shared/tracking/records';
import { verifyTarget } from '#shared/tracking/token';

/**
 * What the tracking hostname serves: the open pixel and the link redirects of tracked messages.
 * A token whose signature does not hold is a 404 (nothing read, nothing counted, no redirect). A
 * valid token is answered even when its message is no longer tracked (the grant deleted): the
 * recipient still gets the image and reaches the link, and nothing is counted.
 *
 * `message.opened` is announced once per message, at its first open by a person, and
 * `message.link_clicked` once per link, at its first click by a person (the contract: "when a
 * participant first opens the message"); later ones are counted on the stored events only.
 * Requests that say they are automated are counted apart and announce nothing.
 */
export interface TrackingRequest {
  sourceIp: string;
  userAgent: string;
  headers: Record<string, string>;
}

/**
 * Link scanners, previewers and crawlers that name themselves in their User-Agent. Mail providers'
 * image proxies (Gmail's GoogleImageProxy, Yahoo's) are not among them: they fetch when a person opens.
 */
const AUTOMATED_AGENTS =
  /bot\b|bot\/|crawler|spider|slurp|facebookexternalhit|whatsapp|skypeuripreview|barracuda|proofpoint|mimecast|urldefense|safelinks|symantec|forcepoint|trendmicro|fortiguard|ironport|headlesschrome|python-requests|go-http-client|okhttp|httpclient|preview/i;

/** Whether a request says it is automated: a prefetch (Purpose, Sec-Purpose, X-Purpose, X-Moz) or a known scanner's agent. */
export function isAutomated(request: Pick<TrackingRequest, 'userAgent' | 'headers'>): boolean {
  const header = (name: string) => request.headers[name] ?? request.headers[name.toLowerCase()] ?? '';
  for (const name of ['purpose', 'sec-purpose', 'x-purpose', 'x-moz']) {
    if (/prefetch|preview|prerender/i.test(header(name))) return true;
  }
  return AUTOMATED_AGENTS.test(request.userAgent);
}

const notFound = () =>
  new NotFoundError('This tracking URL is not valid: it was not issued by this deployment or was altered');

const common = (tracked: TrackedMessageRecord, now: number) => ({
  message_id: tracked.message_id,
  ...(tracked.label !== undefined ? { label: tracked.label } : {}),
  sender_app_id: tracked.application_id,
  timestamp: now,
});

/** The open pixel was loaded. */
export async function trackOpen(token: string, request: TrackingRequest): Promise<void> {
  const target = await verifyTarget(token, 'open');
  if (target?.kind !== 'open') throw notFound();
  const tracked = await getTrackedMessage(target.grantId ?? target.applicationId, target.messageId);
  if (!tracked || tracked.application_id !== target.applicationId || !tracked.opens) return;
  const owner = ownerOf(tracked);
  const now = clock.nowSeconds();
  const bot = isAutomated(request);
  if (!bot && tracked.first_open_at === undefined) {
    const object: MessageOpened = {
      ...common(tracked, now),
      message_data: { count: 1, timestamp: now },
      recents: [{ opened_id: 0, ip: request.sourceIp, user_agent: request.userAgent, timestamp: now }],
    };
    const notification = newNotification({
      type: 'message.opened',
      applicationId: tracked.application_id,
      grantId: tracked.grant_id ?? null,
      object,
    });
    if (await recordFirstOpen(owner, tracked.message_id, now, { notification })) return;
  }
  await countOpen(owner, tracked.message_id, now, bot);
}

/** A tracked link was followed: where to send the browser. */
export async function trackClick(token: string, request: TrackingRequest): Promise<string> {
  const target = await verifyTarget(token, 'link');
  if (target?.kind !== 'link') throw notFound();
  const tracked = await getTrackedMessage(target.grantId ?? target.applicationId, target.messageId);
  if (!tracked || tracked.application_id !== target.applicationId || !tracked.links) return target.url;
  const owner = ownerOf(tracked);
  const now = clock.nowSeconds();
  const bot = isAutomated(request);
  const link: TrackedLinkRecord = { message_id: tracked.message_id, index: target.index, url: target.url };
  if (!bot) {
    const clicked = await clickedLinksOf(owner, tracked.message_id);
    const self = clicked.find((l) => l.index === target.index);
    if (self?.first_click_at === undefined) {
      const others = clicked.filter((l) => l.index !== target.index && l.click_count);
      const object: LinkClicked = {
        ...common(tracked, now),
        link_data: [...others, { ...link, click_count: 1 }]
          .sort((a, b) => a.index - b.index)
          .map((l) => ({ url: l.url, count: l.click_count ?? 0 })),
        recents: [
          {
            click_id: '0',
            link_index: String(target.index),
            ip: request.sourceIp,
            user_agent: request.userAgent,
            timestamp: now,
          },
        ],
      };
      const notification = newNotification({
        type: 'message.link_clicked',
        applicationId: tracked.application_id,
        grantId: tracked.grant_id ?? null,
        object,
      });
      if (await recordFirstClick(owner, link, now, { notification })) return target.url;
    }
  }
  await countClick(owner, link, now, bot);
  return target.url;
}

/** The open pixel: a transparent 1x1 GIF (43 bytes). */
export const TRANSPARENT_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
