/**
 * vCard (RFC 2426 3.0 and RFC 6350 4.0) to and from the contact fields of the API, and contact
 * groups in both spellings servers use: Apple's (`X-ADDRESSBOOKSERVER-KIND:group` with
 * `X-ADDRESSBOOKSERVER-MEMBER` lines, what iCloud stores) and vCard 4's (`KIND:group`, `MEMBER`).
 * Pure functions, no I/O. Unknown properties are ignored on read; writing produces only what the
 * fields hold, so a read-modify-write drops what the fields cannot carry (callers that must keep it
 * should patch the original text instead).
 */

export type VCardVersion = '3.0' | '4.0';

export interface ContactFields {
  given_name?: string;
  middle_name?: string;
  surname?: string;
  suffix?: string;
  nickname?: string;
  /** 'YYYY-MM-DD', or '--MM-DD' without a year. */
  birthday?: string;
  company_name?: string;
  job_title?: string;
  manager_name?: string;
  office_location?: string;
  notes?: string;
  picture_url?: string;
  emails?: { email: string; type?: 'work' | 'home' | 'other' }[];
  phone_numbers?: { number: string; type?: 'work' | 'home' | 'mobile' | 'other' }[];
  physical_addresses?: {
    type: 'work' | 'home' | 'other';
    street_address?: string;
    city?: string;
    state?: string;
    postal_code?: string;
    country?: string;
  }[];
  im_addresses?: { im_address: string; type?: string }[];
  web_pages?: { url: string; type?: 'work' | 'home' | 'other' }[];
}

export type ParsedVCard =
  | { kind: 'individual'; uid: string; fields: ContactFields; categories: string[] }
  | { kind: 'group'; uid: string; name: string; members: string[] };

/** Input that is no usable vCard; the message says what is wrong with it. */
export class MalformedVCard extends Error {
  override readonly name = 'MalformedVCard';
}

interface ContentLine {
  /** The group prefix (`item1` of `item1.EMAIL`), lower-cased; '' when none. */
  group: string;
  /** Upper-cased. */
  name: string;
  /** Parameter names upper-cased; values as written (quotes removed), split at commas. */
  params: Map<string, string[]>;
  /** Raw (still escaped) value. */
  value: string;
}

// ---------------------------------------------------------------------------------------------
// Reading

/** Unfolds (a line break followed by a space or tab continues the line) and splits into lines. */
function unfold(text: string): string[] {
  return text
    .replace(/\r\n|\r/g, '\n')
    .replace(/\n[ \t]/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '');
}

function parseLine(line: string): ContentLine | undefined {
  // The value starts after the first colon outside a quoted parameter value.
  let inQuotes = false;
  let colon = -1;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') inQuotes = !inQuotes;
    else if (c === ':' && !inQuotes) {
      colon = i;
      break;
    }
  }
  if (colon <= 0) return undefined;
  const head = splitOutsideQuotes(line.slice(0, colon), ';');
  const [qualified = '', ...rawParams] = head;
  const dot = qualified.lastIndexOf('.');
  const name = qualified.slice(dot + 1).toUpperCase();
  if (!/^[A-Z0-9-]+$/.test(name)) return undefined;
  const params = new Map<string, string[]>();
  for (const raw of rawParams) {
    const eq = raw.indexOf('=');
    // vCard 2.1 style (`TEL;WORK;VOICE:`), still written by some 3.0 producers: a bare TYPE value.
    const [key, value] = eq === -1 ? ['TYPE', raw] : [raw.slice(0, eq).toUpperCase(), raw.slice(eq + 1)];
    const values = splitOutsideQuotes(value, ',').map((one) => one.replace(/^"(.*)"$/, '$1'));
    params.set(key, [...(params.get(key) ?? []), ...values]);
  }
  return { group: dot === -1 ? '' : qualified.slice(0, dot).toLowerCase(), name, params, value: line.slice(colon + 1) };
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let inQuotes = false;
  for (const c of text) {
    if (c === '"') inQuotes = !inQuotes;
    if (c === separator && !inQuotes) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}

/** Splits a value at unescaped `separator`s (the parts stay escaped). */
function splitEscaped(value: string, separator: ';' | ','): string[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '\\' && i + 1 < value.length) {
      current += c + value[i + 1];
      i++;
    } else if (c === separator) {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts;
}

/** `\n` and `\N` are line breaks; any other escaped character stands for itself (`\,` `\;` `\\`, and a stray `\:`). */
function unescapeText(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' || c === 'N' ? '\n' : c));
}

const text = (value: string) => unescapeText(value).trim();

function types(line: ContentLine): string[] {
  // A quoted list (vCard 4's TYPE="voice,home") is still a list.
  return (line.params.get('TYPE') ?? []).flatMap((type) => type.toLowerCase().split(','));
}

/** Apple's custom labels (`item1.X-ABLabel:_$!<Other>!$_`), keyed by group, lower-cased and unwrapped. */
function appleLabels(lines: ContentLine[]): Map<string, string> {
  const labels = new Map<string, string>();
  for (const line of lines) {
    if (line.name === 'X-ABLABEL' && line.group)
      labels.set(
        line.group,
        text(line.value)
          .replace(/^_\$!<(.*)>!\$_$/, '$1')
          .toLowerCase(),
      );
  }
  return labels;
}

function kindOf(line: ContentLine, labels: Map<string, string>, allowed: string[]): string | undefined {
  const all = [...types(line), ...(line.group && labels.has(line.group) ? [labels.get(line.group)!] : [])];
  if (allowed.includes('mobile') && all.some((type) => type === 'cell' || type === 'mobile' || type === 'iphone'))
    return 'mobile';
  for (const type of allowed) if (all.includes(type)) return type;
  if (all.some((type) => type === 'other' || type === 'fax' || type === 'pager')) return 'other';
  return undefined;
}

/** A vCard birthday as 'YYYY-MM-DD' or '--MM-DD'; undefined for what is no date. */
function birthdayOf(line: ContentLine): string | undefined {
  const value = text(line.value);
  const yearless = /^--(\d{2})-?(\d{2})/.exec(value);
  if (yearless) return `--${yearless[1]}-${yearless[2]}`;
  const full = /^(\d{4})-?(\d{2})-?(\d{2})/.exec(value);
  if (!full) return undefined;
  // Apple writes a birthday without year as 1604-MM-DD with X-APPLE-OMIT-YEAR=1604.
  if (line.params.get('X-APPLE-OMIT-YEAR')?.[0] === full[1]) return `--${full[2]}-${full[3]}`;
  return `${full[1]}-${full[2]}-${full[3]}`;
}

/** A PHOTO as a URL: a URI value as is, inline base64 (3.0 `ENCODING=b`) as a data: URL. */
function photoOf(line: ContentLine): string | undefined {
  const encoding = (line.params.get('ENCODING')?.[0] ?? '').toLowerCase();
  const value = line.value.replace(/\s+/g, '');
  if (encoding === 'b' || encoding === 'base64') {
    const type = (line.params.get('TYPE')?.[0] ?? 'jpeg').toLowerCase();
    return value ? `data:${type.includes('/') ? type : `image/${type}`};base64,${value}` : undefined;
  }
  return value ? unescapeText(value) : undefined;
}

/**
 * Instant messaging services: the vCard 3 property each has (`X-JABBER`, whose name gives the
 * service type, `jabber`) and its IMPP URI scheme (vCard 4, and Apple's 3.0 cards).
 */
const IM_SERVICES: [property: string, scheme: string][] = [
  ['X-JABBER', 'xmpp'],
  ['X-AIM', 'aim'],
  ['X-YAHOO', 'ymsgr'],
  ['X-SKYPE', 'skype'],
  ['X-MSN', 'msnim'],
  ['X-ICQ', 'icq'],
  ['X-GTALK', 'gtalk'],
  ['X-QQ', 'qq'],
];
const serviceOf = (property: string) => property.slice(2).toLowerCase();
/** IMPP scheme → service type. */
const IM_SCHEMES: Record<string, string> = {
  ...Object.fromEntries(IM_SERVICES.map(([property, scheme]) => [scheme, serviceOf(property)])),
  sip: 'lync',
};
/** vCard 3 property → service type, with the other spellings found in the wild. */
const IM_PROPERTIES: Record<string, string> = {
  ...Object.fromEntries(IM_SERVICES.map(([property]) => [property, serviceOf(property)])),
  'X-SKYPE-USERNAME': 'skype',
  'X-GOOGLE-TALK': 'gtalk',
};

function imOf(line: ContentLine): { im_address: string; type?: string } | undefined {
  const value = text(line.value);
  if (!value) return undefined;
  if (line.name !== 'IMPP') return { im_address: value, type: IM_PROPERTIES[line.name]! };
  const service =
    line.params.get('X-SERVICE-TYPE')?.[0]?.toLowerCase() ??
    types(line).find((type) => Object.values(IM_SCHEMES).includes(type));
  const scheme = /^([a-z][a-z0-9+.-]*):(.*)$/i.exec(value);
  const address = scheme ? scheme[2]! : value;
  const type = service ?? (scheme ? IM_SCHEMES[scheme[1]!.toLowerCase()] : undefined);
  return type ? { im_address: address, type } : { im_address: address };
}

/** UIDs and member references: `urn:uuid:` is how vCard 4 spells them, not part of the UID. */
const bareUid = (value: string) => value.trim().replace(/^urn:uuid:/i, '');

/**
 * Reads one vCard. `fallbackUid` (the resource name, say) stands in for a missing UID; without
 * either, MalformedVCard, as for text that is no vCard at all.
 */
export function parseVCard(input: string, options: { fallbackUid?: string } = {}): ParsedVCard {
  if (typeof input !== 'string' || input.trim() === '') throw new MalformedVCard('empty vCard');
  const physical = unfold(input);
  const begin = physical.findIndex((line) => /^BEGIN:VCARD\s*$/i.test(line));
  if (begin === -1) throw new MalformedVCard('no BEGIN:VCARD line: this is not a vCard');
  const end = physical.findIndex((line, i) => i > begin && /^END:VCARD\s*$/i.test(line));
  if (end === -1) throw new MalformedVCard('no END:VCARD line: the vCard is cut off');
  const lines: ContentLine[] = [];
  for (const raw of physical.slice(begin + 1, end)) {
    const line = parseLine(raw);
    if (!line)
      throw new MalformedVCard(
        `unreadable line ${JSON.stringify(raw.slice(0, 60))}: a vCard line is NAME[;PARAM=VALUE]:VALUE`,
      );
    // A nested vCard (vCard 2.1 AGENT) is not ours to read.
    if (line.name === 'BEGIN' || line.name === 'END')
      throw new MalformedVCard(`nested ${line.name}:${line.value} inside the vCard`);
    lines.push(line);
  }
  const first = (name: string) => lines.find((line) => line.name === name);
  const all = (name: string) => lines.filter((line) => line.name === name);

  const uidLine = first('UID');
  const uid =
    uidLine && bareUid(unescapeText(uidLine.value))
      ? bareUid(unescapeText(uidLine.value))
      : options.fallbackUid?.trim();
  if (!uid) throw new MalformedVCard('the vCard has no UID');

  const n = first('N') ? splitEscaped(first('N')!.value, ';').map(text) : [];
  const fn = first('FN') ? text(first('FN')!.value) : '';
  const kind = (first('KIND') ?? first('X-ADDRESSBOOKSERVER-KIND'))?.value.trim().toLowerCase();
  if (kind === 'group') {
    const members = [...all('MEMBER'), ...all('X-ADDRESSBOOKSERVER-MEMBER')]
      .map((line) => bareUid(unescapeText(line.value)))
      .filter(Boolean);
    return { kind: 'group', uid, name: fn || n.filter(Boolean).join(' '), members: [...new Set(members)] };
  }

  const labels = appleLabels(lines);
  const fields: ContactFields = {};
  const set = <K extends keyof ContactFields>(key: K, value: ContactFields[K] | undefined) => {
    if (value !== undefined && value !== '' && !(Array.isArray(value) && value.length === 0)) fields[key] = value;
  };
  const [surname, given, middle, , suffix] = n;
  set('given_name', given);
  set('middle_name', middle);
  set('surname', surname);
  set('suffix', suffix);
  const org = first('ORG') ? text(splitEscaped(first('ORG')!.value, ';')[0] ?? '') : '';
  // A card with a formatted name only (no N components): that name is all there is to show.
  if (!given && !middle && !surname && fn && fn !== org) set('given_name', fn);
  set(
    'nickname',
    first('NICKNAME') ? splitEscaped(first('NICKNAME')!.value, ',').map(text).filter(Boolean).join(', ') : undefined,
  );
  set('birthday', first('BDAY') ? birthdayOf(first('BDAY')!) : undefined);
  set('company_name', org);
  set('job_title', first('TITLE') ? text(first('TITLE')!.value) : undefined);
  const manager =
    lines.find((line) =>
      ['X-MANAGER', 'X-MS-MANAGER', 'X-EVOLUTION-MANAGER', 'X-KADDRESSBOOK-X-MANAGERSNAME'].includes(line.name),
    ) ??
    lines.find(
      (line) =>
        (line.name === 'X-ABRELATEDNAMES' || line.name === 'RELATED') &&
        [...types(line), labels.get(line.group)].some((type) => type === 'manager' || type === 'x-manager'),
    );
  set('manager_name', manager ? text(manager.value) : undefined);
  const office = lines.find((line) =>
    ['X-OFFICE-LOCATION', 'X-MS-OFFICE-LOCATION', 'X-MS-OFFICELOCATION', 'X-KADDRESSBOOK-X-OFFICE'].includes(line.name),
  );
  set('office_location', office ? text(office.value) : undefined);
  set('notes', first('NOTE') ? unescapeText(first('NOTE')!.value) : undefined);
  set('picture_url', first('PHOTO') ? photoOf(first('PHOTO')!) : undefined);

  set(
    'emails',
    all('EMAIL').flatMap((line) => {
      const email = text(line.value).replace(/^mailto:/i, '');
      const type = kindOf(line, labels, ['work', 'home']) as 'work' | 'home' | 'other' | undefined;
      return email ? [type ? { email, type } : { email }] : [];
    }),
  );
  set(
    'phone_numbers',
    all('TEL').flatMap((line) => {
      const number = text(line.value).replace(/^tel:/i, '');
      const type = kindOf(line, labels, ['mobile', 'work', 'home']) as 'work' | 'home' | 'mobile' | 'other' | undefined;
      return number ? [type ? { number, type } : { number }] : [];
    }),
  );
  set(
    'physical_addresses',
    all('ADR').flatMap((line) => {
      const [poBox = '', extended = '', street = '', city = '', state = '', postal = '', country = ''] = splitEscaped(
        line.value,
        ';',
      ).map(text);
      const address = {
        type: (kindOf(line, labels, ['work', 'home']) ?? 'other') as 'work' | 'home' | 'other',
      } as NonNullable<ContactFields['physical_addresses']>[number];
      const streetAddress = [street, extended, poBox].filter(Boolean).join('\n');
      if (streetAddress) address.street_address = streetAddress;
      if (city) address.city = city;
      if (state) address.state = state;
      if (postal) address.postal_code = postal;
      if (country) address.country = country;
      return Object.keys(address).length > 1 ? [address] : [];
    }),
  );
  set(
    'im_addresses',
    lines.filter((line) => line.name === 'IMPP' || line.name in IM_PROPERTIES).flatMap((line) => imOf(line) ?? []),
  );
  set(
    'web_pages',
    all('URL').flatMap((line) => {
      const url = text(line.value);
      const type = kindOf(line, labels, ['work', 'home']) as 'work' | 'home' | 'other' | undefined;
      return url ? [type ? { url, type } : { url }] : [];
    }),
  );
  const categories = all('CATEGORIES').flatMap((line) => splitEscaped(line.value, ',').map(text).filter(Boolean));
  return { kind: 'individual', uid, fields, categories };
}

// ---------------------------------------------------------------------------------------------
// Writing

/** Escapes a text value (or one component of a structured one): backslash, comma, semicolon, line breaks. */
function escapeText(value: string): string {
  return value
    .replace(/\\/g, '\\\\')
    .replace(/,/g, '\\,')
    .replace(/;/g, '\\;')
    .replace(/\r\n|\r|\n/g, '\\n');
}

/** A URI value: no escaping (a data: URL's comma is part of it), but no line break either. */
const uriValue = (value: string) => value.replace(/[\r\n]+/g, '');

/**
 * Folds a content line at 75 octets (RFC 6350 3.2), never inside a UTF-8 sequence: each
 * continuation line starts with a space, which counts towards its 75.
 */
export function foldLine(line: string): string {
  const out: string[] = [];
  let current = '';
  let octets = 0;
  for (const char of line) {
    const size = Buffer.byteLength(char, 'utf8');
    if (octets + size > 75) {
      out.push(current);
      current = ' ';
      octets = 1;
    }
    current += char;
    octets += size;
  }
  out.push(current);
  return out.join('\r\n');
}

/** A parameter value, quoted when it holds a character that would end it. */
const paramValue = (value: string) => (/[:;,"]/.test(value) ? `"${value.replace(/"/g, "'")}"` : value);

class VCardWriter {
  private readonly lines: string[] = [];
  constructor(readonly version: VCardVersion) {}

  add(name: string, value: string, params: [string, string][] = []): void {
    const head = [name, ...params.map(([key, param]) => `${key}=${paramValue(param)}`)].join(';');
    this.lines.push(`${head}:${value}`);
  }

  /** TYPE parameter values in the version's customary case (upper in 3.0, lower in 4.0). */
  type(...values: string[]): [string, string][] {
    const filtered = values.filter(Boolean);
    if (!filtered.length) return [];
    return [
      ['TYPE', filtered.map((value) => (this.version === '3.0' ? value.toUpperCase() : value.toLowerCase())).join(',')],
    ];
  }

  uid(uid: string): string {
    // vCard 4 prefers UIDs as URIs; a UUID gets the urn:uuid: form readers strip again.
    return this.version === '4.0' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(uid)
      ? `urn:uuid:${uid}`
      : escapeText(uid);
  }

  toString(): string {
    return `${['BEGIN:VCARD', `VERSION:${this.version}`, 'PRODID:-//Switchboard//Contacts API//EN', ...this.lines, 'END:VCARD'].map(foldLine).join('\r\n')}\r\n`;
  }
}

const IM_SCHEME_OF: Record<string, string> = Object.fromEntries(
  Object.entries(IM_SCHEMES).map(([scheme, type]) => [type, scheme]),
);

/** The formatted name: the names in reading order, else whatever else identifies the contact. */
function formattedName(fields: ContactFields): string {
  const name = [fields.given_name, fields.middle_name, fields.surname].filter((part) => part?.trim()).join(' ');
  const full = fields.suffix?.trim() ? `${name} ${fields.suffix.trim()}`.trim() : name;
  return (
    full ||
    fields.nickname ||
    fields.company_name ||
    fields.emails?.[0]?.email ||
    fields.phone_numbers?.[0]?.number ||
    ''
  );
}

function writeBirthday(writer: VCardWriter, birthday: string): void {
  const yearless = /^--(\d{2})-(\d{2})$/.exec(birthday);
  const full = /^(\d{4})-(\d{2})-(\d{2})$/.exec(birthday);
  if (yearless) {
    // 3.0 has no year-less date: Apple's convention (year 1604, flagged) is what its clients read.
    if (writer.version === '4.0') writer.add('BDAY', `--${yearless[1]}${yearless[2]}`);
    else writer.add('BDAY', `1604-${yearless[1]}-${yearless[2]}`, [['X-APPLE-OMIT-YEAR', '1604']]);
  } else if (full) {
    writer.add(
      'BDAY',
      writer.version === '4.0' ? `${full[1]}${full[2]}${full[3]}` : birthday,
      writer.version === '4.0' ? [] : [['VALUE', 'date']],
    );
  } else throw new MalformedVCard(`birthday ${JSON.stringify(birthday)} is neither YYYY-MM-DD nor --MM-DD`);
}

function writePhoto(writer: VCardWriter, url: string): void {
  const inline = /^data:([^;,]+)?;base64,(.*)$/is.exec(url);
  if (inline && writer.version === '3.0') {
    // 3.0 has no data: URLs: inline binary, as iCloud writes it.
    const type = (inline[1] ?? 'image/jpeg').replace(/^image\//i, '').toUpperCase();
    writer.add('PHOTO', inline[2]!.replace(/\s+/g, ''), [
      ['ENCODING', 'b'],
      ['TYPE', type],
    ]);
  } else writer.add('PHOTO', uriValue(url), writer.version === '3.0' ? [['VALUE', 'uri']] : []);
}

/** A contact's vCard (3.0 unless asked for 4.0). */
export function writeContactVCard(
  uid: string,
  fields: ContactFields,
  options: { version?: VCardVersion; categories?: string[] } = {},
): string {
  const writer = new VCardWriter(options.version ?? '3.0');
  writer.add('UID', writer.uid(uid));
  writer.add('FN', escapeText(formattedName(fields)));
  writer.add(
    'N',
    [fields.surname, fields.given_name, fields.middle_name, '', fields.suffix]
      .map((part) => escapeText(part ?? ''))
      .join(';'),
  );
  if (fields.nickname) writer.add('NICKNAME', escapeText(fields.nickname));
  if (fields.birthday) writeBirthday(writer, fields.birthday);
  if (fields.company_name) writer.add('ORG', escapeText(fields.company_name));
  if (fields.job_title) writer.add('TITLE', escapeText(fields.job_title));
  // No standard property for either (RELATED has no manager type): the X- names most readers know.
  if (fields.manager_name) writer.add('X-MANAGER', escapeText(fields.manager_name));
  if (fields.office_location) writer.add('X-OFFICE-LOCATION', escapeText(fields.office_location));
  if (fields.notes) writer.add('NOTE', escapeText(fields.notes));
  if (fields.picture_url) writePhoto(writer, fields.picture_url);
  for (const { email, type } of fields.emails ?? [])
    writer.add('EMAIL', escapeText(email), writer.type(writer.version === '3.0' ? 'internet' : '', type ?? ''));
  for (const { number, type } of fields.phone_numbers ?? [])
    writer.add('TEL', escapeText(number), writer.type(type === 'mobile' ? 'cell' : (type ?? '')));
  for (const address of fields.physical_addresses ?? []) {
    const parts = ['', '', address.street_address, address.city, address.state, address.postal_code, address.country];
    writer.add('ADR', parts.map((part) => escapeText(part ?? '')).join(';'), writer.type(address.type));
  }
  for (const { im_address, type } of fields.im_addresses ?? []) {
    const service = type?.toLowerCase();
    // IMPP wants a URI: the service's scheme, or Apple's x-apple: for services without one.
    const uri =
      /^[a-z][a-z0-9+.-]*:/i.test(im_address) && !service
        ? im_address
        : `${(service && IM_SCHEME_OF[service]) ?? 'x-apple'}:${im_address}`;
    writer.add('IMPP', uriValue(uri), service ? [['X-SERVICE-TYPE', service]] : []);
  }
  for (const { url, type } of fields.web_pages ?? []) writer.add('URL', uriValue(url), writer.type(type ?? ''));
  if (options.categories?.length) writer.add('CATEGORIES', options.categories.map(escapeText).join(','));
  return writer.toString();
}

/**
 * A contact group's vCard: in 3.0 Apple's form (what iCloud and macOS Contacts read), in 4.0 the
 * standard `KIND:group` with MEMBER lines. Members are the UIDs of contact vCards.
 */
export function writeGroupVCard(
  uid: string,
  name: string,
  memberUids: string[],
  options: { version?: VCardVersion } = {},
): string {
  const writer = new VCardWriter(options.version ?? '3.0');
  writer.add('UID', writer.uid(uid));
  writer.add('FN', escapeText(name));
  writer.add('N', `${escapeText(name)};;;;`);
  const members = [...new Set(memberUids)].map((member) => `urn:uuid:${member}`);
  if (writer.version === '4.0') {
    writer.add('KIND', 'group');
    for (const member of members) writer.add('MEMBER', uriValue(member));
  } else {
    writer.add('X-ADDRESSBOOKSERVER-KIND', 'group');
    for (const member of members) writer.add('X-ADDRESSBOOKSERVER-MEMBER', uriValue(member));
  }
  return writer.toString();
}
