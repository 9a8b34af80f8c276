/**
 * The pure function behind `PUT /v3/grants/{grant_id}/messages/clean`: turns one email body into
 * the readable text of the newest message (markdown by default), without quoted history,
 * signatures, tracking pixels or markup noise.
 *
 * Pipeline: sanitize-html drops active content (script, style, head…) with its text and labels
 * what else must go (hidden elements, pixels, quotes, signatures, reply headers) → a linear pass
 * over the sanitized string removes labelled elements and cuts at reply separators → turndown
 * (markdown or plain-text rules) → line-level removal of plain-text quotes, signatures and
 * closing phrases → whitespace normalisation. Nothing is fetched or executed: sanitize-html
 * (htmlparser2) and turndown (domino) only parse.
 */
// Read only inside functions: the lazy chunk (scripts/esbuild-plugins.cjs, lazy-chunks) loads on the first message cleaned.
import { sanitizeHtml, TurndownService } from '#shared/lazy/clean';
import { decodeEntities } from '#shared/mail/entities';

export interface CleanOptions {
  /** Drop links, keeping their text. Default true. */
  ignore_links?: boolean;
  /** Drop images entirely. Default true. */
  ignore_images?: boolean;
  /** When images are kept, write them as markdown images ![alt](src); otherwise as their alt text. Default false. */
  images_as_markdown?: boolean;
  /** Drop tables entirely (layout tables in newsletters). Default true. */
  ignore_tables?: boolean;
  /** Remove closing phrases and what follows them (signature blocks): "Best regards", "Kind regards", "Thanks,", "Cheers", "Sent from my iPhone"… Default true. */
  remove_conclusion_phrases?: boolean;
  /** Output markdown (true, default) or plain text (false). */
  html_as_markdown?: boolean;
}

const CLEAN_DEFAULTS: Required<CleanOptions> = Object.freeze({
  ignore_links: true,
  ignore_images: true,
  images_as_markdown: false,
  ignore_tables: true,
  remove_conclusion_phrases: true,
  html_as_markdown: true,
});

type Options = Required<CleanOptions>;

/**
 * Cleans one message body. `isPlaintext` bodies are not HTML: only quote/signature removal and
 * whitespace normalisation apply. A body flagged as HTML that contains no tag at all is treated as
 * plain text too, because HTML whitespace rules would merge its lines (and with them the `>`
 * quote prefixes) into one paragraph.
 */
export function cleanMessageBody(body: string, options?: CleanOptions, isPlaintext = false): string {
  if (typeof body !== 'string' || body === '') return '';
  const opts = resolveOptions(options);
  const input = body.replace(MARKS_RE, '');
  if (isPlaintext || !LOOKS_LIKE_HTML_RE.test(input)) return cleanText(decodeEntities(input), opts);
  // Read outside the tries: libraries that fail to load are an error of ours, not a malformed body.
  const sanitize = sanitizeHtml;
  try {
    return cleanText(htmlToText(input, opts), opts);
  } catch {
    // Malformed input must never fail the request: fall back to the bare text of the body.
    try {
      return cleanText(decodeEntities(sanitize(input, TEXT_ONLY)), opts);
    } catch {
      return '';
    }
  }
}

function resolveOptions(options: CleanOptions | undefined): Options {
  const given = options ?? {};
  // `??` rather than spread, so an explicit `undefined` still means "default".
  return {
    ignore_links: given.ignore_links ?? CLEAN_DEFAULTS.ignore_links,
    ignore_images: given.ignore_images ?? CLEAN_DEFAULTS.ignore_images,
    images_as_markdown: given.images_as_markdown ?? CLEAN_DEFAULTS.images_as_markdown,
    ignore_tables: given.ignore_tables ?? CLEAN_DEFAULTS.ignore_tables,
    remove_conclusion_phrases: given.remove_conclusion_phrases ?? CLEAN_DEFAULTS.remove_conclusion_phrases,
    html_as_markdown: given.html_as_markdown ?? CLEAN_DEFAULTS.html_as_markdown,
  };
}

// ---------------------------------------------------------------------------------------------
// Markers. Private-use code points survive sanitize-html, domino and turndown untouched; they
// are stripped from the input first, so a body cannot forge them.

/** Where a quote was removed: lets the text stage drop the "On … wrote:" line above it. */
const QUOTE_MARK = '\uE001';
/** Starts each table cell, so the row rule can join cells with ` | `. */
const CELL_MARK = '\uE002';
const MARKS_RE = /[\uE001\uE002]/g;

/** A real tag or comment, not "<ann@x.com>" or "<https://…>" in a plain-text body sent as HTML. */
const LOOKS_LIKE_HTML_RE = /<[a-z][a-z0-9]*(?:\s[^<>]*)?\/?>|<\/[a-z][a-z0-9]*\s*>|<!--/i;

// ---------------------------------------------------------------------------------------------
// Stage 1: sanitize-html.
//
// Elements to remove are only *labelled* here (data-sb="drop|quote|cut") and removed in stage 2:
// sanitize-html can only remove an element with its content by truncating its output string
// (exclusiveFilter), which is quadratic in the number of such elements, and renaming an element
// to a tag it then skips corrupts the closing tags that follow (its transformMap entry leaks).
// Active content (script, style, head…) is dropped here, contents included, by tag name.

/**
 * Tags kept for their structure. Everything else is unwrapped (its text kept) unless listed in
 * NON_TEXT_TAGS: inline wrappers such as span or font change nothing in the output, and every
 * element fewer is time saved in domino and turndown, which dominate the run time.
 */
const STRUCTURE_TAGS = [
  'address',
  'article',
  'aside',
  'blockquote',
  'br',
  'caption',
  'center',
  'dd',
  'div',
  'dl',
  'dt',
  'figcaption',
  'figure',
  'footer',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'tbody',
  'td',
  'tfoot',
  'th',
  'thead',
  'tr',
  'ul',
];
/** Only markdown has syntax for these. */
const MARKDOWN_TAGS = ['b', 'strong', 'i', 'em', 'code'];
/** Carries the label of an element whose own tag is unwrapped (a hidden span, a quote in a font…). */
const LABEL_CARRIER = 'switchboard-label';

function allowedTags(opts: Options): string[] {
  return [
    ...STRUCTURE_TAGS,
    ...(opts.html_as_markdown ? MARKDOWN_TAGS : []),
    ...(opts.ignore_links ? [] : ['a']),
    ...(opts.ignore_images ? [] : ['img']),
    LABEL_CARRIER,
  ];
}

/** Disallowed tags whose *contents* go too (turndown alone would keep the text of a `<script>`). */
const NON_TEXT_TAGS = [
  'script',
  'style',
  'head',
  'title',
  'noscript',
  'iframe',
  'frame',
  'frameset',
  'noframes',
  'object',
  'embed',
  'applet',
  'template',
  'svg',
  'math',
  'canvas',
  'audio',
  'video',
  'map',
  'textarea',
  'select',
  'option',
  'xmp',
  'noembed',
];
const NON_TEXT_TAG_SET: ReadonlySet<string> = new Set(NON_TEXT_TAGS);

/** Whole-quote containers: Gmail, Yahoo, Proton (blockquote is matched by tag). */
const QUOTE_CLASSES: ReadonlySet<string> = new Set([
  'gmail_quote',
  'gmail_quote_container',
  'gmail_extra',
  'yahoo_quoted',
  'protonmail_quote',
]);
/** Signatures and quote attributions that are their own element. */
const DROP_CLASSES: ReadonlySet<string> = new Set([
  'gmail_signature',
  'gmail_attr',
  'moz-cite-prefix',
  'moz-signature',
]);
const DROP_IDS: ReadonlySet<string> = new Set(['signature']);
/** Outlook (web and new Outlook) reply headers: the original message follows them as siblings. */
const CUT_IDS: ReadonlySet<string> = new Set([
  'divrplyfwdmsg',
  'appendonsend',
  'mail-editor-reference-message-container',
]);

type Role = 'keep' | 'drop' | 'quote' | 'cut';
const ROLE_ATTRIBUTE = 'data-sb';

const HIDDEN_STYLE_RE = /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b/i;
const STYLE_WIDTH_RE = /(?:^|[;\s])width\s*:\s*(\d+(?:\.\d+)?)(?:px)?\s*(?:!important\s*)?(?:;|$)/i;
const STYLE_HEIGHT_RE = /(?:^|[;\s])height\s*:\s*(\d+(?:\.\d+)?)(?:px)?\s*(?:!important\s*)?(?:;|$)/i;
/** Outlook desktop's reply header is a div with only a top border instead of an `<hr>`. */
const BORDER_TOP_RE = /border-top\s*:\s*solid/i;
const BORDER_NONE_RE = /(?:^|;)\s*border\s*:\s*none/i;

function classify(tag: string, attribs: sanitizeHtml.Attributes, opts: Options): Role {
  // Most tags carry none of what is looked at below.
  const plain =
    attribs.hidden === undefined &&
    attribs.style === undefined &&
    attribs.id === undefined &&
    attribs.class === undefined;
  if (plain && tag !== 'blockquote' && tag !== 'img' && tag !== 'table') return 'keep';
  if (attribs.hidden !== undefined || (attribs.style !== undefined && HIDDEN_STYLE_RE.test(attribs.style)))
    return 'drop';
  const id = (attribs.id ?? '').trim().toLowerCase();
  const classes = (attribs.class ?? '').toLowerCase().split(/\s+/);
  if (CUT_IDS.has(id)) return 'cut';
  if (tag === 'blockquote' || classes.some((name) => QUOTE_CLASSES.has(name))) return 'quote';
  if (DROP_IDS.has(id) || classes.some((name) => DROP_CLASSES.has(name))) return 'drop';
  if (tag === 'img' && (opts.ignore_images || isTrackingPixel(attribs))) return 'drop';
  if (tag === 'table' && opts.ignore_tables) return 'drop';
  return 'keep';
}

function dimension(attribs: sanitizeHtml.Attributes, name: 'width' | 'height'): number | undefined {
  const fromAttribute = Number.parseFloat(attribs[name] ?? '');
  if (Number.isFinite(fromAttribute)) return fromAttribute;
  const match =
    attribs.style === undefined ? null : (name === 'width' ? STYLE_WIDTH_RE : STYLE_HEIGHT_RE).exec(attribs.style);
  return match?.[1] === undefined ? undefined : Number.parseFloat(match[1]);
}

/** 1x1 (or 0-sized) images exist only to report that the mail was opened; a 1-pixel side is a spacer at best. */
function isTrackingPixel(attribs: sanitizeHtml.Attributes): boolean {
  const width = dimension(attribs, 'width');
  const height = dimension(attribs, 'height');
  return (width !== undefined && width <= 1) || (height !== undefined && height <= 1);
}

/** Rebuilds the attributes from scratch, so an input cannot smuggle in our own labels. */
function keptAttributes(tag: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Attributes {
  const kept: sanitizeHtml.Attributes = {};
  const copy = (name: string) => {
    const value = attribs[name];
    if (value !== undefined) kept[name] = value;
  };
  if (tag === 'a') copy('href');
  if (tag === 'img') {
    copy('src');
    copy('alt');
  }
  if (tag === 'ol') copy('start');
  const style = attribs.style;
  if (tag === 'div' && style !== undefined && BORDER_TOP_RE.test(style) && BORDER_NONE_RE.test(style))
    kept['data-sb-sep'] = '1';
  return kept;
}

function labelTags(opts: Options, allowed: ReadonlySet<string>): sanitizeHtml.Transformer {
  return (tagName, attribs) => {
    if (NON_TEXT_TAG_SET.has(tagName)) return { tagName, attribs: {} };
    // Images are void: when they are not wanted at all, unwrapping them is removing them.
    if (tagName === 'img' && !allowed.has('img')) return { tagName, attribs: {} };
    const role = classify(tagName, attribs, opts);
    if (role === 'keep')
      return { tagName: tagName === LABEL_CARRIER ? 'span' : tagName, attribs: keptAttributes(tagName, attribs) };
    // An unwrapped tag would lose the label (and its content would stay): carry it on an allowed tag.
    return { tagName: allowed.has(tagName) ? tagName : LABEL_CARRIER, attribs: { [ROLE_ATTRIBUTE]: role } };
  };
}

function sanitizeOptions(opts: Options): sanitizeHtml.IOptions {
  const allowed = allowedTags(opts);
  return {
    allowedTags: allowed,
    allowedAttributes: { '*': [ROLE_ATTRIBUTE], a: ['href'], img: ['src', 'alt'], ol: ['start'], div: ['data-sb-sep'] },
    allowedSchemes: ['http', 'https', 'mailto', 'tel'],
    allowedSchemesByTag: { img: ['http', 'https', 'cid'] },
    allowProtocolRelative: true,
    disallowedTagsMode: 'discard',
    nonTextTags: NON_TEXT_TAGS,
    parseStyleAttributes: false,
    transformTags: { '*': labelTags(opts, new Set(allowed)) },
  };
}

/** Last-resort text extraction: every tag unwrapped, non-text contents dropped. */
const TEXT_ONLY: sanitizeHtml.IOptions = { allowedTags: [], allowedAttributes: {}, nonTextTags: NON_TEXT_TAGS };

/** Elements htmlparser2 never keeps open (void), or closes when a sibling of the same name opens. */
const VOID_TAGS: ReadonlySet<string> = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
const SIBLING_CLOSED_TAGS: ReadonlySet<string> = new Set([
  'p',
  'li',
  'td',
  'th',
  'tr',
  'dt',
  'dd',
  'option',
  'optgroup',
  'thead',
  'tbody',
  'tfoot',
  'rb',
  'rt',
  'rp',
  'rtc',
]);
/** Far deeper than any real email; htmlparser2 `unshift`s its stack (quadratic) and turndown recurses per level. */
const MAX_OPEN_TAGS = 128;
const TAG_START_RE = /<(\/?)([a-zA-Z][a-zA-Z0-9:-]*)/g;

/**
 * Turns opening tags beyond MAX_OPEN_TAGS (counted roughly, on the raw input) into `<wbr`, a void
 * element with no text, so a megabyte of unclosed `<b>` or `<div>` cannot take minutes. The text
 * of those elements stays; only their nesting is lost. Real messages never reach the limit and
 * are returned as they are, without building a copy.
 */
function flattenDeepNesting(html: string): string {
  const counter = nestingCounter();
  TAG_START_RE.lastIndex = 0;
  for (let tag = TAG_START_RE.exec(html); tag !== null; tag = TAG_START_RE.exec(html)) {
    if (!counter(tag[1] ?? '', tag[2] ?? '')) return html.replace(TAG_START_RE, flattener());
  }
  return html;
}

/** Tracks open tags; answers false for an opening tag that would exceed MAX_OPEN_TAGS. */
function nestingCounter(): (slash: string, rawName: string) => boolean {
  let depth = 0;
  const open = new Map<string, number>();
  return (slash, rawName) => {
    const name = rawName.toLowerCase();
    if (VOID_TAGS.has(name)) return true;
    const count = open.get(name) ?? 0;
    if (slash) {
      if (count > 0) {
        open.set(name, count - 1);
        depth--;
      }
      return true;
    }
    if (count > 0 && SIBLING_CLOSED_TAGS.has(name)) return true;
    if (depth >= MAX_OPEN_TAGS) return false;
    open.set(name, count + 1);
    depth++;
    return true;
  };
}

function flattener(): (match: string, slash: string, rawName: string) => string {
  const counter = nestingCounter();
  return (match, slash, rawName) => (counter(slash, rawName) ? match : '<wbr');
}

// ---------------------------------------------------------------------------------------------
// Stage 2: the sanitized string. It is well-formed (sanitize-html closes every tag it opens,
// writes void tags as `<x />`), its text cannot contain `<` and its attribute values cannot
// contain `>`, so a regex scan over tags is exact here, and linear.

/** Our label, as sanitize-html writes it (the only attribute of a labelled element). */
const LABEL_RE = /<([a-z][a-z0-9-]*) data-sb="(drop|quote|cut)"( \/)?>/g;
/** Any tag; group 1 marks a closing tag, group 2 a void one. */
const TAG_RE = /<(\/?)[a-z][a-z0-9-]*[^>]*?( \/)?>/g;

/**
 * Removes labelled elements with their content, before domino and turndown spend time on them:
 * a quote leaves a marker paragraph, the first cut label ends the message.
 */
function removeLabelled(html: string): string {
  let out = '';
  let from = 0;
  LABEL_RE.lastIndex = 0;
  for (let label = LABEL_RE.exec(html); label !== null; label = LABEL_RE.exec(html)) {
    out += html.slice(from, label.index);
    if (label[2] === 'cut') return withoutTrailingRules(out);
    if (label[2] === 'quote') out += `<p>${QUOTE_MARK}</p>`;
    from = label[3] ? LABEL_RE.lastIndex : elementEnd(html, label.index);
    LABEL_RE.lastIndex = from;
  }
  return out + html.slice(from);
}

/** The `<hr>` Outlook puts above its reply header belongs to the history it introduces. */
function withoutTrailingRules(html: string): string {
  let end = html.trimEnd();
  while (end.endsWith('<hr />')) end = end.slice(0, -'<hr />'.length).trimEnd();
  return end;
}

/** Index just after the closing tag of the element opening at `start`. */
function elementEnd(html: string, start: number): number {
  let depth = 0;
  TAG_RE.lastIndex = start;
  for (let tag = TAG_RE.exec(html); tag !== null; tag = TAG_RE.exec(html)) {
    if (tag[1]) depth--;
    else if (!tag[2]) depth++;
    if (depth <= 0) return TAG_RE.lastIndex;
  }
  return html.length;
}

/**
 * An `<hr>` (Outlook web) or a top-bordered div (Outlook desktop) followed, through markup only,
 * by "From:" (and its localized forms) opens the quoted original. Bounded repeats keep the scan
 * linear even on a megabyte of `<hr>`.
 */
const REPLY_SEPARATOR_RE =
  /<(?:hr \/|div data-sb-sep="1")>(?:\s*<[^>]{0,400}>){0,40}\s*(?:from|de|von|van|da|fra|från|od|от)\s?:/i;

function cutAtReplySeparator(html: string): string {
  const separator = REPLY_SEPARATOR_RE.exec(html);
  return separator ? html.slice(0, separator.index) : html;
}

/**
 * turndown's cost grows with elements × depth (every blank element searches its whole subtree for
 * void elements, and each list level re-indents its content). Beyond these bounds, which no real
 * message reaches, the markup is adversarial and gets the linear fallback instead.
 */
const MAX_ELEMENTS = 60_000;
const MAX_ELEMENTS_TIMES_DEPTH = 2_000_000;

function withinBudget(html: string): boolean {
  let elements = 0;
  let depth = 0;
  let maxDepth = 0;
  TAG_RE.lastIndex = 0;
  for (let tag = TAG_RE.exec(html); tag !== null; tag = TAG_RE.exec(html)) {
    if (tag[1]) {
      depth--;
      continue;
    }
    elements++;
    if (!tag[2]) maxDepth = Math.max(maxDepth, ++depth);
    if (elements > MAX_ELEMENTS || elements * maxDepth > MAX_ELEMENTS_TIMES_DEPTH) return false;
  }
  return true;
}

const FAST_TOKEN_RE = /<(\/?)([a-z][a-z0-9-]*)[^>]*>|[^<]+/g;
const FAST_BLOCK_TAGS: ReadonlySet<string> = new Set([
  ...STRUCTURE_TAGS.filter((tag) => tag !== 'br' && tag !== 'li'),
  'p',
]);

/**
 * Linear fallback for adversarial markup: plain text with paragraph breaks, list items and line
 * breaks, no markdown. Text in sanitized HTML carries only the escapes sanitize-html writes.
 */
function fastText(html: string): string {
  const parts: string[] = [];
  FAST_TOKEN_RE.lastIndex = 0;
  for (let token = FAST_TOKEN_RE.exec(html); token !== null; token = FAST_TOKEN_RE.exec(html)) {
    const tag = token[2];
    if (tag === undefined) {
      parts.push(unescapeSanitized(token[0].replace(/[ \t\r\n]+/g, ' ')));
    } else if (tag === 'br') {
      parts.push('\n');
    } else if (tag === 'li' && !token[1]) {
      parts.push('\n- ');
    } else if (FAST_BLOCK_TAGS.has(tag)) {
      parts.push('\n\n');
    }
  }
  return parts
    .join('')
    .split('\n')
    .map((line) => line.trim())
    .join('\n');
}

function unescapeSanitized(text: string): string {
  return text.replace(
    /&(lt|gt|quot|amp);/g,
    (_entity, name: string) => ({ lt: '<', gt: '>', quot: '"', amp: '&' })[name] ?? '',
  );
}

// ---------------------------------------------------------------------------------------------
// Stage 3: turndown.

/** The part of domino's DOM (inside turndown) that the rules read; lib.dom is not part of this project. */
interface DomElement {
  nodeName: string;
  textContent: string | null;
  firstChild: DomElement | null;
  nextSibling: DomElement | null;
  parentNode: DomElement | null;
  children: ArrayLike<DomElement>;
  getAttribute(name: string): string | null;
}

const converters = new Map<string, TurndownService>();

/** One converter per option combination that changes rules; turndown keeps no state between calls. */
function converter(opts: Options): TurndownService {
  const key = `${opts.html_as_markdown}:${opts.ignore_links}:${opts.images_as_markdown}`;
  let service = converters.get(key);
  if (!service) {
    service = buildConverter(opts);
    converters.set(key, service);
  }
  return service;
}

function buildConverter(opts: Options): TurndownService {
  const markdown = opts.html_as_markdown;
  const service = new TurndownService({
    headingStyle: 'atx',
    bulletListMarker: '-',
    codeBlockStyle: 'fenced',
    fence: '```',
    hr: '---',
    // Hard breaks as plain newlines: "no trailing spaces" would strip turndown's two-space breaks anyway.
    br: '',
    emDelimiter: '_',
    strongDelimiter: '**',
  });
  // Same escapes as turndown's, in one pass instead of thirteen: the default dominated the run time.
  service.escape = markdown ? escapeMarkdown : (text: string) => text;
  const escape = service.escape.bind(service);

  if (markdown) {
    service.addRule('preformatted', {
      filter: (node: DomElement) => node.nodeName === 'PRE' && node.firstChild?.nodeName !== 'CODE',
      replacement: (_content: string, node: DomElement) => {
        const code = node.textContent ?? '';
        let fence = '```';
        while (code.includes(fence)) fence += '`';
        return `\n\n${fence}\n${trimNewlines(code)}\n${fence}\n\n`;
      },
    });
  } else {
    // Emphasis and code tags were unwrapped by sanitize-html already (see MARKDOWN_TAGS).
    service.addRule('plainBlock', {
      filter: ['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'pre'],
      replacement: (content: string) => `\n\n${content}\n\n`,
    });
    service.addRule('plainRule', { filter: 'hr', replacement: () => '\n\n' });
  }

  service.addRule('link', {
    filter: 'a',
    replacement: (content: string, node: DomElement) => {
      const href = node.getAttribute('href');
      if (opts.ignore_links || !href || content.trim() === '') return content;
      if (markdown) return `[${content}](${linkDestination(href)})`;
      const target = href.replace(/^mailto:/i, '');
      return content.trim() === target || content.trim() === href ? content : `${content} (${target})`;
    },
  });

  service.addRule('image', {
    filter: 'img',
    replacement: (_content: string, node: DomElement) => {
      const alt = collapseSpaces(node.getAttribute('alt') ?? '');
      const src = node.getAttribute('src');
      if (markdown && opts.images_as_markdown && src) return `![${escape(alt)}](${linkDestination(src)})`;
      return escape(alt);
    },
  });

  service.addRule('listItem', {
    filter: 'li',
    replacement: (content: string, node: DomElement) => {
      const parent = node.parentNode;
      let prefix = '- ';
      if (parent?.nodeName === 'OL') {
        const start = parent.getAttribute('start');
        const first = start !== null && /^\d{1,9}$/.test(start) ? Number(start) : 1;
        prefix = `${first + Array.prototype.indexOf.call(parent.children, node)}. `;
      }
      const body = trimNewlines(content).replace(/\n/g, `\n${' '.repeat(prefix.length)}`);
      return prefix + body + (node.nextSibling ? '\n' : '');
    },
  });

  // Tables survive only with ignore_tables: false (otherwise they are labelled for removal).
  service.addRule('tableCell', { filter: ['td', 'th'], replacement: (content: string) => CELL_MARK + content });
  service.addRule('tableRow', { filter: 'tr', replacement: tableRow });
  service.addRule('tableCaption', { filter: 'caption', replacement: (content: string) => `\n\n${content}\n\n` });

  return service;
}

const INLINE_ESCAPE_RE = /[\\*`[\]_]/g;
const LINE_START_ESCAPES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^-/, '\\-'],
  [/^\+ /, '\\+ '],
  [/^(=+)/, '\\$1'],
  [/^(#{1,6}) /, '\\$1 '],
  [/^~~~/, '\\~~~'],
  [/^>/, '\\>'],
  [/^(\d+)\. /, '$1\\. '],
];
const LINE_START_CHARS = '-+=#~>0123456789';

/** turndown's markdown escaping (backslash before \ * ` [ ] _ anywhere, and list/heading/quote markers at the start). */
function escapeMarkdown(text: string): string {
  let escaped = text.replace(INLINE_ESCAPE_RE, '\\$&');
  if (escaped !== '' && LINE_START_CHARS.includes(escaped.charAt(0))) {
    for (const [pattern, replacement] of LINE_START_ESCAPES) escaped = escaped.replace(pattern, replacement);
  }
  return escaped;
}

/** One line per row, cells joined by ` | `; a single-cell row (layout tables) keeps its own line breaks. */
function tableRow(content: string): string {
  const cells = content
    .split(CELL_MARK)
    .map((cell) => cell.trim())
    .filter((cell) => cell !== '');
  if (cells.length === 0) return '\n\n';
  if (cells.length === 1) return `\n\n${cells[0]}\n\n`;
  const flat = cells.map((cell) =>
    cell
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '')
      .join(' '),
  );
  return `\n${flat.join(' | ')}\n`;
}

function linkDestination(url: string): string {
  const escaped = url.replace(/[<>()]/g, (char) => `\\${char}`);
  return escaped.replace(/\s/g, '%20');
}

function collapseSpaces(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function trimNewlines(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text[start] === '\n') start++;
  while (end > start && text[end - 1] === '\n') end--;
  return text.slice(start, end);
}

function htmlToText(html: string, opts: Options): string {
  const sanitized = sanitizeHtml(flattenDeepNesting(html), sanitizeOptions(opts));
  const kept = cutAtReplySeparator(removeLabelled(sanitized));
  if (kept.trim() === '') return '';
  return withinBudget(kept) ? converter(opts).turndown(kept) : fastText(kept);
}

// ---------------------------------------------------------------------------------------------
// Stage 4: lines. Shared by HTML (after turndown) and plain-text bodies.

function cleanText(text: string, opts: Options): string {
  let lines = normalizeCharacters(text).replaceAll(CELL_MARK, '').split('\n');
  lines = removeQuotedHistory(lines);
  lines = removeSignature(lines);
  if (opts.remove_conclusion_phrases) lines = removeConclusion(lines);
  return joinLines(lines);
}

function normalizeCharacters(text: string): string {
  return text
    .replace(/\r\n?|[\u2028\u2029]/g, '\n')
    .replace(/[\u00a0\u2007\u202f]/g, ' ')
    .replace(/[\u200b\u2060\ufeff\u00ad]/g, '');
}

/** Lines longer than this are prose, never an attribution, closing phrase or header. */
const MAX_MARKER_LINE = 500;

/** The line without markdown escapes and emphasis, for matching only. */
function unmark(line: string): string {
  if (!NEEDS_UNMARK_RE.test(line)) return line.trim();
  return collapseSpaces(line.replace(/\\(.)/g, '$1').replace(/[*_]/g, ''));
}
const NEEDS_UNMARK_RE = /[\\*_]|\s\s/;

/** A `>`-prefixed line, or the marker of a removed quote (alone, or inside list/table punctuation). */
function isQuotedLine(line: string): boolean {
  const start = line.trimStart();
  if (start.startsWith('>') || start.startsWith('\\>')) return true;
  return line.includes(QUOTE_MARK) && /^[\s\-|*\d.]*$/.test(line.replaceAll(QUOTE_MARK, ''));
}

const ATTRIBUTION_RES = [
  /^on\s.{1,300}\swrote\s?:$/i,
  /^.{0,200}<[^<>\s]+@[^<>\s]+>\s+wrote\s?:$/i,
  /^le\s.{1,300}\sa\s+écrit\s?:$/i,
  /^am\s.{1,300}\sschrieb\s.{1,300}:$/i,
  /^el\s.{1,300}\sescribió\s?:$/i,
  /^il\s.{1,300}\sha\s+scritto\s?:$/i,
  /^(?:em|no)\s.{1,300}\sescreveu\s?:$/i,
  /^op\s.{1,300}\sschreef\s.{1,300}:$/i,
];

function isAttribution(text: string): boolean {
  return text.length <= MAX_MARKER_LINE && ATTRIBUTION_RES.some((re) => re.test(text));
}

/** Cheap pre-check: every attribution ends with one of these verbs. */
const ATTRIBUTION_VERB_RE = /wrote|écrit|schrieb|escribió|scritto|escreveu|schreef/i;

/** How many lines an "On … wrote:" attribution spans at `index` (clients wrap it onto a second line), or 0. */
function attributionSpan(lines: readonly string[], index: number): number {
  const line = lines[index] ?? '';
  if (line.length > MAX_MARKER_LINE || line.trim() === '') return 0;
  if (ATTRIBUTION_VERB_RE.test(line) && isAttribution(unmark(line))) return 1;
  const next = lines[index + 1];
  if (next === undefined || next.length > MAX_MARKER_LINE || !ATTRIBUTION_VERB_RE.test(next)) return 0;
  return isAttribution(`${unmark(line)} ${unmark(next)}`) ? 2 : 0;
}

/** Cheap pre-check: a header line has a colon, a separator line dashes or underscores. */
const HISTORY_HINT_RE = /[:_-]/;
const ORIGINAL_MESSAGE_RE =
  /^-{2,}\s?(?:original message|forwarded message|message d'origine|ursprüngliche nachricht|mensaje original)\s?-{2,}$/i;
const HEADER_FROM_RE = /^(?:from|de|von|van|da)\s?:\s?\S/i;
const HEADER_DATE_RE = /^(?:sent|date|envoyé|gesendet|enviado|verzonden|inviato|datum)\s?:/i;
const HEADER_TO_RE = /^(?:to|subject|à|objet|an|betreff|para|asunto|aan|onderwerp|a|oggetto)\s?:/i;

/** Outlook plain-text replies: "-----Original Message-----", or a From:/Sent:/To: header block. */
function startsHistory(lines: readonly string[], index: number): boolean {
  const line = lines[index] ?? '';
  if (line.length > MAX_MARKER_LINE || !HISTORY_HINT_RE.test(line)) return false;
  const text = unmark(line);
  if (ORIGINAL_MESSAGE_RE.test(text)) return true;
  // The underscore rule Outlook puts above the header (markdown escapes it as \_).
  const rule = line.replace(/\\/g, '').trim();
  if (rule.length >= 10 && /^_+$/.test(rule)) {
    const next = lines.slice(index + 1, index + 4).find((candidate) => candidate.trim() !== '');
    return next !== undefined && HEADER_FROM_RE.test(unmark(next));
  }
  if (!HEADER_FROM_RE.test(text)) return false;
  const following = lines.slice(index + 1, index + 6).map(unmark);
  return (
    following.some((candidate) => HEADER_DATE_RE.test(candidate)) &&
    following.some((candidate) => HEADER_TO_RE.test(candidate))
  );
}

function removeQuotedHistory(lines: readonly string[]): string[] {
  const kept: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    if (isQuotedLine(line)) continue;
    const span = attributionSpan(lines, index);
    if (span > 0) {
      let next = index + span;
      while (next < lines.length && (lines[next] ?? '').trim() === '') next++;
      // Attribution directly above quoted lines: drop both and keep any reply below (bottom/inline posting).
      if (next < lines.length && isQuotedLine(lines[next] ?? '')) {
        index = next - 1;
        continue;
      }
      // Otherwise the quoted text is not prefixed (Outlook style): everything below is history.
      break;
    }
    if (startsHistory(lines, index)) break;
    // A quote removed from the middle of a line (inline context): the rest of the line stays.
    kept.push(line.includes(QUOTE_MARK) ? line.replaceAll(QUOTE_MARK, '') : line);
  }
  return kept;
}

/** RFC 3676 signature delimiter "-- " (many clients lose the trailing space); markdown escapes it as "\--". */
function removeSignature(lines: readonly string[]): string[] {
  const at = lines.findIndex((line) => /^\\?--\s*$/.test(line));
  return at < 0 ? [...lines] : lines.slice(0, at);
}

const CLOSING_PHRASES = [
  'best',
  'all the best',
  'all best',
  'best regards',
  'kind regards',
  'kindest regards',
  'warm regards',
  'warmest regards',
  'warm wishes',
  'best wishes',
  'regards',
  'with regards',
  'with best regards',
  'with kind regards',
  'many thanks',
  'thanks',
  'thanks so much',
  'thanks a lot',
  'thanks again',
  'thanks in advance',
  'thank you',
  'thank you so much',
  'thank you very much',
  'thanks (?:&|and) (?:best |kind |warm )?regards',
  'thx',
  'cheers',
  'sincerely',
  'yours sincerely',
  'sincerely yours',
  'yours truly',
  'yours faithfully',
  'respectfully',
  'cordially',
  'take care',
  'talk soon',
  'with thanks',
  'with gratitude',
  // A few localized ones (bonus): German, French, Spanish, Italian, Portuguese, Dutch.
  'mit freundlichen grüßen',
  'freundliche grüße',
  'viele grüße',
  'beste grüße',
  'liebe grüße',
  'cordialement',
  'bien à vous',
  'bien cordialement',
  'saludos',
  'un saludo',
  'atentamente',
  'cordiali saluti',
  'distinti saluti',
  'atenciosamente',
  'met vriendelijke groet',
  'vriendelijke groeten',
];
const CLOSING_RE = new RegExp(`^(?:${CLOSING_PHRASES.join('|')})\\s?[,!.]*$`, 'i');
/** Mobile and webmail footers: nothing of the message ever follows them. */
const DEVICE_FOOTER_RE =
  /^(?:sent from my \S.{0,40}|sent from (?:outlook|mail for windows|yahoo mail|my mobile)\b.{0,40}|get outlook for (?:ios|android)\b.{0,20})$/i;

/**
 * Cuts at the first line that is only a closing phrase, and everything after it (the name and
 * signature block). A closing phrase with nothing above it is the whole message ("Thanks!"), so
 * it is kept and the search goes on.
 */
function removeConclusion(lines: readonly string[]): string[] {
  let hasContent = false;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    if (line.trim() === '') continue;
    if (line.length <= 80) {
      const text = unmark(line);
      if (DEVICE_FOOTER_RE.test(text)) return lines.slice(0, index);
      if (hasContent && CLOSING_RE.test(text)) return lines.slice(0, index);
    }
    hasContent = true;
  }
  return [...lines];
}

/** No trailing spaces, at most one blank line in a row, no leading/trailing blank lines. */
function joinLines(lines: readonly string[]): string {
  const out: string[] = [];
  let blank = false;
  for (const raw of lines) {
    const line = raw.trimEnd();
    if (line.trim() === '') {
      blank = out.length > 0;
      continue;
    }
    if (blank) out.push('');
    blank = false;
    out.push(line);
  }
  return out.join('\n').trim();
}
