import { XMLParser, XMLValidator } from '#shared/lazy/xml';

/**
 * The XML side of WebDAV, CalDAV and CardDAV: a namespace-resolved element tree from a server's
 * answer, and request bodies built as strings. Servers spell namespaces every way (`d:`, `D:`, `C:`,
 * `cal:`, default namespaces, declarations on inner elements), so elements are matched by their
 * namespace URI and local name, never by prefix.
 */

export const NS = {
  DAV: 'DAV:',
  CALDAV: 'urn:ietf:params:xml:ns:caldav',
  CARDDAV: 'urn:ietf:params:xml:ns:carddav',
  /** getctag lives here (a CalendarServer extension every CalDAV server kept). */
  CS: 'http://calendarserver.org/ns/',
  /** calendar-color (Apple iCal's namespace). */
  APPLE: 'http://apple.com/ns/ical/',
} as const;

export interface XmlElement {
  /** The namespace URI ('' when none). */
  ns: string;
  /** The local name, without prefix. */
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** The element's own text (CDATA included), not its descendants'. */
  text: string;
}

/** Thrown for an answer that is not well-formed XML. */
export class XmlSyntaxError extends Error {
  override readonly name = 'XmlSyntaxError';
}

/** Made on first use: the library is a lazy chunk, loaded by the first DAV answer, not at init. */
let parser: XMLParser | undefined;
const parserOf = () =>
  (parser ??= new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    parseTagValue: false,
    parseAttributeValue: false,
    // Calendar data is text whose line breaks matter: nothing trimmed.
    trimValues: false,
    processEntities: true,
    htmlEntities: true,
  }));

type OrderedNode = Record<string, unknown> & { ':@'?: Record<string, string> };

/** The root element of `text`, namespaces resolved; XmlSyntaxError when it is not well-formed XML. */
export function parseXml(text: string): XmlElement {
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new XmlSyntaxError(`${valid.err.msg} (line ${valid.err.line})`);
  const nodes = parserOf().parse(text) as OrderedNode[];
  const root = nodes
    .map((node) => toElement(node, new Map([['xml', 'http://www.w3.org/XML/1998/namespace']])))
    .find((element) => element !== undefined);
  if (!root) throw new XmlSyntaxError('no root element');
  return root;
}

function toElement(node: OrderedNode, inherited: Map<string, string>): XmlElement | undefined {
  const tag = Object.keys(node).find((key) => key !== ':@' && key !== '#text');
  if (tag === undefined || tag.startsWith('?') || tag.startsWith('!')) return undefined;
  const attributes = node[':@'] ?? {};
  let scope = inherited;
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'xmlns' || key.startsWith('xmlns:')) {
      if (scope === inherited) scope = new Map(inherited);
      scope.set(key === 'xmlns' ? '' : key.slice(6), value);
    }
  }
  const colon = tag.indexOf(':');
  const prefix = colon === -1 ? '' : tag.slice(0, colon);
  const element: XmlElement = {
    ns: scope.get(prefix) ?? '',
    name: colon === -1 ? tag : tag.slice(colon + 1),
    attributes: {},
    children: [],
    text: '',
  };
  for (const [key, value] of Object.entries(attributes)) {
    if (key !== 'xmlns' && !key.startsWith('xmlns:'))
      element.attributes[key.includes(':') ? key.slice(key.indexOf(':') + 1) : key] = String(value);
  }
  for (const child of (node[tag] as OrderedNode[] | undefined) ?? []) {
    if ('#text' in child) element.text += String(child['#text']);
    else {
      const sub = toElement(child, scope);
      if (sub) element.children.push(sub);
    }
  }
  return element;
}

/** The direct children named `name` in namespace `ns`. */
export function children(element: XmlElement | undefined, ns: string, name: string): XmlElement[] {
  return element ? element.children.filter((child) => child.ns === ns && child.name === name) : [];
}

/** The first direct child named `name` in namespace `ns`. */
export function child(element: XmlElement | undefined, ns: string, name: string): XmlElement | undefined {
  return element?.children.find((one) => one.ns === ns && one.name === name);
}

/** The element's text and its descendants', in document order. */
export function textOf(element: XmlElement | undefined): string {
  if (!element) return '';
  return element.text + element.children.map(textOf).join('');
}

/** Text for inside an element or a double-quoted attribute; a CR stays a CR (a parser would turn CRLF into LF). */
export function escapeXml(value: string): string {
  return value.replace(
    /[<>&"'\r]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;', '\r': '&#13;' })[c]!,
  );
}

/** The prefixes request bodies use (declared on each body's root). */
export const XMLNS = `xmlns:d="${NS.DAV}" xmlns:c="${NS.CALDAV}" xmlns:card="${NS.CARDDAV}" xmlns:cs="${NS.CS}" xmlns:ical="${NS.APPLE}"`;

/** A request body: the XML declaration, then `root` (a prefixed name) declaring every prefix above around `inner`. */
export function xmlBody(root: string, inner: string): string {
  return `<?xml version="1.0" encoding="utf-8"?>\n<${root} ${XMLNS}>${inner}</${root}>`;
}
