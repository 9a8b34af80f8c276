import type { ApplicationId, GrantId, MessageId } from '#shared/ids';
import { isTrackableUrl, signTarget } from '#shared/tracking/token';

/**
 * What sending does to the HTML body of a tracked message: each `<a href>` to an http(s) URL leads
 * through a signed redirect on the tracking hostname (links tracked), and a 1x1 image on that
 * hostname is added at the end of the body (opens tracked). Only the MIME that leaves is changed:
 * the Sent copy keeps the body as written, so the sender reading it counts no open. A plain-text
 * body is not changed (there is no image to load, and a rewritten URL would be shown as it is).
 */
export interface TrackedBody {
  hostname: string;
  opens: boolean;
  links: boolean;
  applicationId: ApplicationId;
  /** Absent for a transactional send (no grant). */
  grantId?: GrantId;
  messageId: MessageId;
}

/** Matches an anchor's start tag up to its href value (double-, single- or unquoted). */
const ANCHOR = /<a\b([^>]*?\s)href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi;
const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };

/** An attribute value as the browser reads it (character references decoded). */
function attributeText(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code >= 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

/** The tracked HTML and the URLs of its tracked links, in order (their index is their position here). */
export async function trackedHtml(html: string, tracking: TrackedBody): Promise<{ html: string; links: string[] }> {
  const base = `https://${tracking.hostname}`;
  const ids = { applicationId: tracking.applicationId, grantId: tracking.grantId, messageId: tracking.messageId };
  const links: string[] = [];
  let out = html;
  if (tracking.links) {
    const found: { start: number; end: number; prefix: string; url: string }[] = [];
    for (const match of html.matchAll(ANCHOR)) {
      const value = match[2] ?? match[3] ?? match[4] ?? '';
      const url = attributeText(value).trim();
      if (!isTrackableUrl(url)) continue;
      found.push({ start: match.index, end: match.index + match[0].length, prefix: `<a${match[1]}href=`, url });
    }
    const tokens = await Promise.all(found.map((f, index) => signTarget({ kind: 'link', ...ids, index, url: f.url })));
    let rebuilt = '';
    let at = 0;
    found.forEach((f, index) => {
      rebuilt += `${html.slice(at, f.start)}${f.prefix}"${escapeAttribute(`${base}/t/l/${tokens[index]}`)}"`;
      at = f.end;
      links.push(f.url);
    });
    out = rebuilt + html.slice(at);
  }
  if (tracking.opens) {
    const token = await signTarget({ kind: 'open', ...ids });
    const pixel = `<img src="${base}/t/o/${token}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;
    const close = out.search(/<\/body\s*>(?![\s\S]*<\/body\s*>)/i);
    out = close === -1 ? `${out}${pixel}` : `${out.slice(0, close)}${pixel}${out.slice(close)}`;
  }
  return { html: out, links };
}
