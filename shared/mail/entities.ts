/**
 * HTML character references (`&amp;`, `&rsquo;`, `&#8217;`, `&#x2019;`), decoded the one way
 * Switchboard decodes them: in search text and snippets (shared/agent/text.ts) and in cleaned
 * bodies (shared/mail/clean.ts). No dependencies, so the functions that only index or list mail
 * do not load the HTML parsers for it.
 *
 * Names are case-sensitive as in HTML (`&Auml;` is not `&auml;`); the uppercase spellings HTML
 * keeps for old documents (`&AMP;`, `&LT;`…) are known too. A name not in the table (`&bogus;`,
 * `&constructor;`) is left as written. A number that is no character (0, a surrogate, beyond U+10FFFF) becomes U+FFFD, and
 * 128-159 are read as Windows-1252, as browsers do (`&#146;` is ’). Decoding is done once:
 * `&amp;lt;` becomes `&lt;`, not `<`.
 */
const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', ensp: ' ', emsp: ' ', thinsp: ' ',
  AMP: '&', LT: '<', GT: '>', QUOT: '"', COPY: '©', REG: '®',
  copy: '©', reg: '®', trade: '™', hellip: '…', mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', sbquo: '‚',
  ldquo: '“', rdquo: '”', bdquo: '„', laquo: '«', raquo: '»', lsaquo: '‹', rsaquo: '›', bull: '•', middot: '·',
  euro: '€', pound: '£', yen: '¥', cent: '¢', curren: '¤', sect: '§', para: '¶', deg: '°', plusmn: '±', times: '×',
  divide: '÷', minus: '−', frac12: '½', frac14: '¼', frac34: '¾', sup2: '²', sup3: '³', micro: 'µ', shy: '\u00ad',
  zwnj: '\u200c', zwj: '\u200d', lrm: '\u200e', rlm: '\u200f', iexcl: '¡', iquest: '¿', dagger: '†', Dagger: '‡',
  permil: '‰', prime: '′', Prime: '″', larr: '←', rarr: '→', uarr: '↑', darr: '↓', hearts: '♥', check: '✓',
  auml: 'ä', ouml: 'ö', uuml: 'ü', Auml: 'Ä', Ouml: 'Ö', Uuml: 'Ü', szlig: 'ß', eacute: 'é', egrave: 'è',
  ecirc: 'ê', euml: 'ë', Eacute: 'É', Egrave: 'È', aacute: 'á', agrave: 'à', acirc: 'â', aring: 'å', Aring: 'Å',
  aelig: 'æ', AElig: 'Æ', atilde: 'ã', iacute: 'í', igrave: 'ì', icirc: 'î', iuml: 'ï', oacute: 'ó', ograve: 'ò',
  ocirc: 'ô', otilde: 'õ', oslash: 'ø', Oslash: 'Ø', uacute: 'ú', ugrave: 'ù', ucirc: 'û', yacute: 'ý', yuml: 'ÿ',
  ntilde: 'ñ', Ntilde: 'Ñ', ccedil: 'ç', Ccedil: 'Ç',
};

/** How HTML reads the numbers 128-159 (C1 controls, which nobody means): Windows-1252. */
const WINDOWS_1252: Readonly<Record<number, number>> = {
  0x80: 0x20ac, 0x82: 0x201a, 0x83: 0x0192, 0x84: 0x201e, 0x85: 0x2026, 0x86: 0x2020, 0x87: 0x2021, 0x88: 0x02c6,
  0x89: 0x2030, 0x8a: 0x0160, 0x8b: 0x2039, 0x8c: 0x0152, 0x8e: 0x017d, 0x91: 0x2018, 0x92: 0x2019, 0x93: 0x201c,
  0x94: 0x201d, 0x95: 0x2022, 0x96: 0x2013, 0x97: 0x2014, 0x98: 0x02dc, 0x99: 0x2122, 0x9a: 0x0161, 0x9b: 0x203a,
  0x9c: 0x0153, 0x9e: 0x017e, 0x9f: 0x0178,
};

const ENTITY_RE = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z][a-zA-Z0-9]{1,31}));/g;

export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY_RE, (entity, decimal: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name !== undefined) return Object.hasOwn(NAMED_ENTITIES, name) ? NAMED_ENTITIES[name]! : entity;
    const code = decimal !== undefined ? Number.parseInt(decimal, 10) : Number.parseInt(hex!, 16);
    if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\uFFFD';
    return String.fromCodePoint(WINDOWS_1252[code] ?? code);
  });
}

/** Escapes text for HTML element content and quoted attribute values (the inverse of decoding for `& < > " '`). */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
