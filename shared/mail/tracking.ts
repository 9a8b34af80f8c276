import { isIP } from 'node:net';
import { domainToASCII, domainToUnicode } from 'node:url';
import type { TrackingSettings } from '#shared/db/mail-records';
import { InvalidRequestError } from '#shared/errors';

/**
 * Message tracking settings for drafts and sends: the six hostname rules of the specification,
 * as pure functions so that create, update and send share one implementation.
 *
 * 1. create with `domain_name` → validated, canonical hostname stored;
 * 2. create without it → the regional tracking hostname;
 * 3. update with `domain_name` → replaces the previous hostname after validation;
 * 4. update without it while other options change → the existing hostname is kept;
 * 5. opens and links both off → no hostname stored;
 * 6. either switched on again without a hostname → the regional hostname.
 */

export interface TrackingOptionsInput {
  domain_name?: string;
  opens?: boolean;
  links?: boolean;
  thread_replies?: boolean;
  label?: string;
}

export type { TrackingSettings } from '#shared/db/mail-records';

const FIELD = 'tracking_options.domain_name';
const MAX_HOSTNAME_LENGTH = 253;
const MAX_LABEL_LENGTH = 63;
const MAX_TRACKING_LABEL_LENGTH = 2048;
/** IDNA treats these as label separators too (ideographic and full-width full stops). */
const IDN_DOTS = /[\u3002\uFF0E\uFF61]/g;
const NOT_LDH = /[^a-z0-9-]/;
const NON_ASCII = /[^\x00-\x7f]/;

/** Quotes client input in a message, shortened so a huge value cannot bloat the error. */
function quote(value: string, max = 64): string {
  return `'${value.length > max ? `${value.slice(0, max)}…` : value}'`;
}

function invalid(input: string, reason: string): InvalidRequestError {
  return new InvalidRequestError(`${FIELD} ${quote(input)} ${reason}`);
}

/**
 * One label to its A-label. `domainToASCII` implements the WHATWG host parser, which would read a
 * lone numeric label as an IPv4 address ('１２３' → '0.0.0.123'), so a fixed ASCII label is
 * appended and stripped again; any extra dot means the label mapped to a separator (e.g. '⒈').
 */
function toALabel(label: string): string | undefined {
  const mapped = domainToASCII(`${label}.a`);
  if (!mapped.endsWith('.a')) return undefined;
  const aLabel = mapped.slice(0, -2);
  if (aLabel.includes('.')) return undefined;
  // An all-ASCII host comes back as it is (the URL standard's non-strict carve-out, Node 24's URL
  // parser), even an `xn--` label that is not valid Punycode: decoding it back tells.
  if (aLabel.startsWith('xn--')) {
    const unicode = domainToUnicode(`${aLabel}.a`);
    if (unicode === '' || unicode.startsWith('xn--')) return undefined;
  }
  return aLabel;
}

/**
 * Validates and canonicalises a hostname: trim, lowercase, IDN → punycode (A-labels), one trailing
 * dot removed; then RFC 1123: total length ≤ 253, 1–63 characters per label, labels of [a-z0-9-]
 * not starting or ending with '-', at least two labels, a TLD that is not all-numeric. IP
 * addresses, ports, schemes, paths, userinfo, wildcards and whitespace are rejected. Structural
 * checks run on the raw text first because `domainToASCII` silently drops paths and parses
 * numeric hosts as IPv4, which would turn bad input into a different, valid-looking hostname.
 */
export function canonicalTrackingHostname(input: string): string {
  if (typeof input !== 'string') throw new InvalidRequestError(`${FIELD} must be a string`);
  const trimmed = input.trim();
  if (trimmed === '') throw new InvalidRequestError(`${FIELD} must not be empty`);
  if (/\s/.test(trimmed)) throw invalid(input, 'must not contain whitespace');
  if (trimmed.includes('://') || trimmed.startsWith('//')) {
    throw invalid(input, "must be a bare hostname without a scheme or '//' prefix (such as 'https://')");
  }
  if (trimmed.includes('@')) throw invalid(input, "must not contain userinfo ('@')");
  if (/[/\\?#]/.test(trimmed)) throw invalid(input, 'must be a bare hostname without a path, query or fragment');
  if (trimmed.startsWith('[') || trimmed.includes(']') || isIP(trimmed) === 6) {
    throw invalid(input, 'must be a hostname, not an IP address');
  }
  if (trimmed.includes(':')) {
    if (/:\d*$/.test(trimmed) && !trimmed.slice(0, trimmed.lastIndexOf(':')).includes(':')) {
      throw invalid(input, 'must not include a port');
    }
    throw invalid(input, "must not contain ':'");
  }
  if (trimmed.includes('*')) throw invalid(input, "must not contain wildcards ('*')");

  const dotted = trimmed.toLowerCase().replace(IDN_DOTS, '.');
  if (dotted.startsWith('.')) throw invalid(input, "must not start with '.'");
  if (dotted.includes('..')) throw invalid(input, "must not contain an empty label ('..')");
  const name = dotted.endsWith('.') ? dotted.slice(0, -1) : dotted;

  const labels: string[] = [];
  for (const label of name.split('.')) {
    // Hyphen rules apply to the Unicode form as well (IDNA2008), not only to the A-label.
    if (label.startsWith('-')) throw invalid(input, `label ${quote(label, 16)} must not start with '-'`);
    if (label.endsWith('-')) throw invalid(input, `label ${quote(label, 16)} must not end with '-'`);
    if (NON_ASCII.test(label) || label.startsWith('xn--')) {
      const aLabel = toALabel(label);
      if (aLabel === undefined || aLabel === '') {
        throw invalid(input, `label ${quote(label, 16)} is not a valid internationalised domain label`);
      }
      labels.push(aLabel);
    } else {
      labels.push(label);
    }
  }

  const canonical = labels.join('.');
  if (isIP(canonical) !== 0) throw invalid(input, 'must be a hostname, not an IP address');
  for (const label of labels) {
    if (label.length > MAX_LABEL_LENGTH) {
      throw invalid(input, `label ${quote(label, 16)} is longer than ${MAX_LABEL_LENGTH} characters (${label.length})`);
    }
    const bad = NOT_LDH.exec(label);
    if (bad) {
      throw invalid(input, `label ${quote(label, 16)} contains '${bad[0]}'; only letters, digits and '-' are allowed`);
    }
    if (label.startsWith('-') || label.endsWith('-')) {
      throw invalid(input, `label ${quote(label, 16)} must not start or end with '-'`);
    }
  }
  if (canonical.length > MAX_HOSTNAME_LENGTH) {
    throw invalid(input, `is longer than ${MAX_HOSTNAME_LENGTH} characters (${canonical.length})`);
  }
  if (labels.length < 2) throw invalid(input, "must have at least two labels, such as 'track.example.com'");
  const tld = labels[labels.length - 1]!;
  if (/^\d+$/.test(tld)) throw invalid(input, `top-level label ${quote(tld, 16)} must not be all-numeric`);
  return canonical;
}

/**
 * The regional hostname comes from configuration, not the client, so a bad value is a server
 * fault: it is reported as a plain Error (a 500) rather than a 400 blaming `tracking_options`.
 */
function canonicalRegionalHostname(regionalHostname: string): string {
  try {
    return canonicalTrackingHostname(regionalHostname);
  } catch (error) {
    throw new Error(`The configured regional tracking hostname is invalid: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

function checkedLabel(label: string | undefined): string | undefined {
  // Counted in code points, as JSON Schema's maxLength does.
  if (label !== undefined && [...label].length > MAX_TRACKING_LABEL_LENGTH) {
    throw new InvalidRequestError(`tracking_options.label must be at most ${MAX_TRACKING_LABEL_LENGTH} characters`);
  }
  return label;
}

/** Builds the result so that `label` and `domain_name` are absent, not `undefined`, when unset. */
function settings(
  switches: { opens: boolean; links: boolean; thread_replies: boolean },
  label: string | undefined,
  domainName: () => string,
): TrackingSettings {
  const result: TrackingSettings = { ...switches };
  if (label !== undefined) result.label = label;
  // Rule 5: nothing is tracked, so no hostname is kept.
  if (switches.opens || switches.links) result.domain_name = domainName();
  return result;
}

/**
 * Rules 1, 2 and 5 on create. `input` undefined = no tracking options at all: nothing is tracked
 * and no hostname is stored. Defaults when options are given: opens, links and thread_replies false.
 * A sent `domain_name` is validated even when rule 5 then drops it, so bad input is always a 400.
 */
export function trackingOnCreate(input: TrackingOptionsInput | undefined, regionalHostname: string): TrackingSettings {
  if (input === undefined) return { opens: false, links: false, thread_replies: false };
  const explicit = input.domain_name === undefined ? undefined : canonicalTrackingHostname(input.domain_name);
  const label = checkedLabel(input.label);
  return settings(
    { opens: input.opens ?? false, links: input.links ?? false, thread_replies: input.thread_replies ?? false },
    label,
    () => explicit ?? canonicalRegionalHostname(regionalHostname),
  );
}

/**
 * Rules 3–6 on update. `input` undefined = tracking options untouched (a copy of the existing
 * settings is returned). Fields not sent keep their existing values; validation happens before
 * anything is computed, so an invalid `domain_name` throws and changes nothing.
 */
export function trackingOnUpdate(
  existing: TrackingSettings,
  input: TrackingOptionsInput | undefined,
  regionalHostname: string,
): TrackingSettings {
  if (input === undefined) return { ...existing };
  const explicit = input.domain_name === undefined ? undefined : canonicalTrackingHostname(input.domain_name);
  const label = checkedLabel(input.label) ?? existing.label;
  return settings(
    {
      opens: input.opens ?? existing.opens,
      links: input.links ?? existing.links,
      thread_replies: input.thread_replies ?? existing.thread_replies,
    },
    label,
    // Rule 3, then rule 4, then rule 6 (the hostname was cleared while tracking was off).
    () => explicit ?? existing.domain_name ?? canonicalRegionalHostname(regionalHostname),
  );
}
