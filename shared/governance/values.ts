import { domainToASCII } from 'node:url';
import { MAX_LIST_VALUE_LENGTH } from '#schemas/governance';

/**
 * The values lists hold and rules match: domains, top-level domains and email addresses, each
 * normalized (trimmed, lowercased, internationalized names in punycode) so that a value is stored
 * and looked up under one spelling. Pure functions: no I/O.
 */
export type ValueType = 'domain' | 'tld' | 'address';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/** A top-level label: letters, or an internationalized one in punycode. */
const TOP_LABEL = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;
/** The local part of an address as mail systems accept it (dot-atom, no quoting). */
const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/** A domain name in its ASCII (punycode) form, or why it is not one. */
function asciiDomain(value: string): { ok: true; value: string } | { ok: false; why: string } {
  const ascii = /^[\x21-\x7e]*$/.test(value) ? value : domainToASCII(value);
  if (!ascii) return { ok: false, why: 'not a valid domain name' };
  const name = ascii.endsWith('.') ? ascii.slice(0, -1) : ascii;
  if (name.length > 253) return { ok: false, why: 'longer than a domain name may be (253 characters)' };
  const labels = name.split('.');
  if (labels.length < 2) return { ok: false, why: 'a domain needs at least two labels (example.com)' };
  if (!labels.every((l) => LABEL.test(l)))
    return { ok: false, why: 'not a valid domain name (letters, digits and hyphens in dot-separated labels)' };
  if (!TOP_LABEL.test(labels.at(-1)!)) return { ok: false, why: `'${labels.at(-1)}' is not a valid top-level domain` };
  return { ok: true, value: name };
}

/** The normalized value, or why it cannot be one of `type`. */
export function normalizeValue(type: ValueType, raw: string): { ok: true; value: string } | { ok: false; why: string } {
  if (raw.length > MAX_LIST_VALUE_LENGTH) return { ok: false, why: `longer than ${MAX_LIST_VALUE_LENGTH} characters` };
  const value = raw.trim().toLowerCase();
  if (!value) return { ok: false, why: 'empty' };
  switch (type) {
    case 'domain':
      return asciiDomain(value);
    case 'tld': {
      const label = value.startsWith('.') ? value.slice(1) : value;
      const ascii = /^[\x21-\x7e]*$/.test(label) ? label : domainToASCII(`x.${label}`).slice(2);
      if (!ascii || !TOP_LABEL.test(ascii))
        return { ok: false, why: 'not a valid top-level domain (one label such as com or xn--p1ai)' };
      return { ok: true, value: ascii };
    }
    case 'address': {
      const at = value.lastIndexOf('@');
      if (at <= 0 || at === value.length - 1) return { ok: false, why: 'not an email address (local@domain)' };
      const local = value.slice(0, at);
      if (local.length > 64 || !LOCAL_PART.test(local))
        return { ok: false, why: 'not a valid email address: its local part' };
      const domain = asciiDomain(value.slice(at + 1));
      if (!domain.ok) return { ok: false, why: `not a valid email address: ${domain.why}` };
      return { ok: true, value: `${local}@${domain.value}` };
    }
  }
}

/** The parts of an address rules match: the whole address, its domain and its top-level domain. */
export function addressParts(address: string): { address: string; domain: string; tld: string } | undefined {
  const normalized = normalizeValue('address', address);
  if (!normalized.ok) return undefined;
  const domain = normalized.value.slice(normalized.value.lastIndexOf('@') + 1);
  return { address: normalized.value, domain, tld: domain.slice(domain.lastIndexOf('.') + 1) };
}
