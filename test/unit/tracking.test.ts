import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '#shared/errors';
import {
  canonicalTrackingHostname,
  trackingOnCreate,
  trackingOnUpdate,
  type TrackingSettings,
} from '#shared/mail/tracking';

const REGIONAL = 'track.us.switchboard.example';
const label63 = 'a'.repeat(63);

/** Asserts a 400 that names the field and contains the expected reason. */
function expectInvalid(run: () => unknown, fragment: string): void {
  try {
    run();
    expect.unreachable(`expected an InvalidRequestError containing "${fragment}"`);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    const apiError = error as InvalidRequestError;
    expect(apiError.status).toBe(400);
    expect(apiError.message).toContain('tracking_options.domain_name');
    expect(apiError.message).toContain(fragment);
  }
}

describe('Function: canonicalTrackingHostname', () => {
  it.each([
    ['track.example.com', 'track.example.com'],
    ['Track.Example.COM', 'track.example.com'],
    ['track.example.com.', 'track.example.com'],
    ['  track.example.com\t', 'track.example.com'],
    ['Bücher.example', 'xn--bcher-kva.example'],
    ['münchen.DE.', 'xn--mnchen-3ya.de'],
    ['XN--MNCHEN-3YA.de', 'xn--mnchen-3ya.de'],
    ['пример.рф', 'xn--e1afmkfd.xn--p1ai'],
    ['Ｂüｃher.example', 'xn--bcher-kva.example'],
    ['track.example。com', 'track.example.com'],
    ['x.io', 'x.io'],
    ['1track.123.example', '1track.123.example'],
    ['a-b--c.example', 'a-b--c.example'],
    [`${label63}.example`, `${label63}.example`],
    [`${label63}.${label63}.${label63}.${'a'.repeat(61)}`, `${label63}.${label63}.${label63}.${'a'.repeat(61)}`],
  ])('canonicalises %j to %j', (input, expected) => {
    expect(canonicalTrackingHostname(input)).toBe(expected);
  });

  it('is idempotent on its own output', () => {
    const once = canonicalTrackingHostname('München.Example.');
    expect(canonicalTrackingHostname(once)).toBe(once);
  });

  it.each([
    ['', 'must not be empty'],
    ['   ', 'must not be empty'],
    ['a b.com', 'must not contain whitespace'],
    ['a.com\nb.com', 'must not contain whitespace'],
    [`${label63}.${label63}.${label63}.${label63}`, 'is longer than 253 characters (255)'],
    [`${'a'.repeat(64)}.com`, "label 'aaaaaaaaaaaaaaaa…' is longer than 63 characters (64)"],
    ['-a.com', "label '-a' must not start with '-'"],
    ['a-.com', "label 'a-' must not end with '-'"],
    ['-ü.com', "label '-ü' must not start with '-'"],
    ['a_b.com', "label 'a_b' contains '_'"],
    ['a!b.com', "label 'a!b' contains '!'"],
    ['localhost', 'must have at least two labels'],
    ['localhost.', 'must have at least two labels'],
    ['a.123', "top-level label '123' must not be all-numeric"],
    ['10.0.0.1', 'must be a hostname, not an IP address'],
    ['１０.０.０.１', 'must be a hostname, not an IP address'],
    ['[::1]', 'must be a hostname, not an IP address'],
    ['::1', 'must be a hostname, not an IP address'],
    ['[2001:db8::1]:443', 'must be a hostname, not an IP address'],
    ['a.com:443', 'must not include a port'],
    ['a.com:x', "must not contain ':'"],
    ['https://a.com', 'must be a bare hostname without a scheme'],
    ['HTTP://a.com:80/x', 'must be a bare hostname without a scheme'],
    ['//a.com', "without a scheme or '//' prefix"],
    ['a.com/x', 'without a path, query or fragment'],
    ['a.com?x=1', 'without a path, query or fragment'],
    ['*.a.com', "must not contain wildcards ('*')"],
    ['a..com', "must not contain an empty label ('..')"],
    ['a.com..', "must not contain an empty label ('..')"],
    ['.a.com', "must not start with '.'"],
    ['.', "must not start with '.'"],
    ['u@a.com', "must not contain userinfo ('@')"],
    ['user:pass@a.com', "must not contain userinfo ('@')"],
    ['xn--zz.com', "label 'xn--zz' is not a valid internationalised domain label"],
    ['⒈.com', 'is not a valid internationalised domain label'],
  ])('rejects %j: %s', (input, fragment) => {
    expectInvalid(() => canonicalTrackingHostname(input), fragment);
  });

  it('quotes the offending input, shortened when huge', () => {
    expectInvalid(() => canonicalTrackingHostname('a.com:443'), "'a.com:443'");
    const huge = `${'a'.repeat(5000)}:1`;
    expectInvalid(() => canonicalTrackingHostname(huge), "'aaaa");
    expect(() => canonicalTrackingHostname(huge)).toThrow(
      expect.objectContaining({ message: expect.stringMatching(/^.{1,199}$/s) }),
    );
  });
});

describe('Function: trackingOnCreate', () => {
  it('rule 1: validates a sent domain_name and stores its canonical value', () => {
    expect(trackingOnCreate({ domain_name: 'Links.Acme.Example.', opens: true, links: true }, REGIONAL)).toEqual({
      opens: true,
      links: true,
      thread_replies: false,
      domain_name: 'links.acme.example',
    });
    expectInvalid(
      () => trackingOnCreate({ domain_name: 'https://links.acme.example', opens: true }, REGIONAL),
      'scheme',
    );
  });

  it('rule 2: uses the regional hostname, canonicalised, when no domain_name is sent', () => {
    expect(trackingOnCreate({ opens: true }, 'Track.US.Switchboard.Example.')).toEqual({
      opens: true,
      links: false,
      thread_replies: false,
      domain_name: REGIONAL,
    });
    expect(trackingOnCreate({ links: true, thread_replies: true, label: 'campaign-7' }, REGIONAL)).toEqual({
      opens: false,
      links: true,
      thread_replies: true,
      label: 'campaign-7',
      domain_name: REGIONAL,
    });
  });

  it('rule 5: stores no hostname when neither opens nor links is enabled', () => {
    const result = trackingOnCreate({ thread_replies: true }, REGIONAL);
    expect(result).toEqual({ opens: false, links: false, thread_replies: true });
    expect(result).not.toHaveProperty('domain_name');
    expect(result).not.toHaveProperty('label');
  });

  it('rule 5: drops a sent domain_name when both switches are off, but still validates it', () => {
    const result = trackingOnCreate({ domain_name: 'links.acme.example', opens: false, links: false }, REGIONAL);
    expect(result).toEqual({ opens: false, links: false, thread_replies: false });
    expect(result).not.toHaveProperty('domain_name');
    expectInvalid(() => trackingOnCreate({ domain_name: 'a..com' }, REGIONAL), "'..'");
  });

  it('tracks nothing and stores no hostname without tracking_options', () => {
    expect(trackingOnCreate(undefined, REGIONAL)).toEqual({ opens: false, links: false, thread_replies: false });
    expect(trackingOnCreate({}, REGIONAL)).toEqual({ opens: false, links: false, thread_replies: false });
  });

  it('does not need the regional hostname when nothing is tracked or a domain_name is sent', () => {
    expect(trackingOnCreate({ opens: false }, 'not a hostname')).toEqual({
      opens: false,
      links: false,
      thread_replies: false,
    });
    expect(trackingOnCreate({ opens: true, domain_name: 'links.acme.example' }, 'not a hostname').domain_name).toBe(
      'links.acme.example',
    );
  });

  it('reports a broken regional hostname as a server error, not a 400', () => {
    const run = () => trackingOnCreate({ opens: true }, 'localhost');
    expect(run).toThrow(/configured regional tracking hostname is invalid/);
    try {
      run();
    } catch (error) {
      expect(error).not.toBeInstanceOf(InvalidRequestError);
    }
  });

  it('rejects a label longer than 2048 characters', () => {
    expect(trackingOnCreate({ opens: true, label: 'é'.repeat(2048) }, REGIONAL).label).toHaveLength(2048);
    expect(() => trackingOnCreate({ opens: true, label: 'x'.repeat(2049) }, REGIONAL)).toThrow(InvalidRequestError);
  });
});

describe('Function: trackingOnUpdate', () => {
  const tracked: TrackingSettings = {
    opens: true,
    links: true,
    thread_replies: false,
    label: 'welcome',
    domain_name: 'links.acme.example',
  };
  const untracked: TrackingSettings = { opens: false, links: false, thread_replies: false };

  it('returns the existing settings unchanged when tracking_options is not sent', () => {
    const result = trackingOnUpdate(tracked, undefined, REGIONAL);
    expect(result).toEqual(tracked);
    expect(result).not.toBe(tracked);
  });

  it('rule 3: an explicit domain_name replaces the previous hostname after validation', () => {
    expect(trackingOnUpdate(tracked, { domain_name: 'Clicks.Acme.Example' }, REGIONAL)).toEqual({
      ...tracked,
      domain_name: 'clicks.acme.example',
    });
  });

  it('rule 4: keeps the existing hostname when other options change', () => {
    expect(trackingOnUpdate(tracked, { opens: false, thread_replies: true, label: 'renamed' }, REGIONAL)).toEqual({
      opens: false,
      links: true,
      thread_replies: true,
      label: 'renamed',
      domain_name: 'links.acme.example',
    });
  });

  it('rule 5: clears the hostname when both switches end up off', () => {
    const result = trackingOnUpdate(tracked, { opens: false, links: false }, REGIONAL);
    expect(result).toEqual({ opens: false, links: false, thread_replies: false, label: 'welcome' });
    expect(result).not.toHaveProperty('domain_name');
  });

  it('rule 5: clears the hostname even when a valid domain_name is sent with both switches off', () => {
    const result = trackingOnUpdate(
      tracked,
      { domain_name: 'clicks.acme.example', opens: false, links: false },
      REGIONAL,
    );
    expect(result).not.toHaveProperty('domain_name');
  });

  it('rule 6: re-enabling without a hostname uses the regional hostname', () => {
    expect(trackingOnUpdate(untracked, { links: true }, REGIONAL)).toEqual({
      opens: false,
      links: true,
      thread_replies: false,
      domain_name: REGIONAL,
    });
  });

  it('rule 6: re-enabling with a domain_name uses that canonical hostname', () => {
    expect(trackingOnUpdate(untracked, { opens: true, domain_name: 'Bücher.example.' }, REGIONAL)).toEqual({
      opens: true,
      links: false,
      thread_replies: false,
      domain_name: 'xn--bcher-kva.example',
    });
  });

  it('keeps fields that are not sent', () => {
    expect(trackingOnUpdate(tracked, {}, REGIONAL)).toEqual(tracked);
    expect(trackingOnUpdate(tracked, { thread_replies: true }, REGIONAL)).toEqual({ ...tracked, thread_replies: true });
  });

  it('disabling one of two switches keeps the hostname', () => {
    expect(trackingOnUpdate(tracked, { links: false }, REGIONAL)).toEqual({ ...tracked, links: false });
  });

  it('disabling both then re-enabling one falls back to the regional hostname', () => {
    const off = trackingOnUpdate(tracked, { opens: false, links: false }, REGIONAL);
    expect(off).not.toHaveProperty('domain_name');
    const on = trackingOnUpdate(off, { opens: true }, REGIONAL);
    expect(on).toEqual({ opens: true, links: false, thread_replies: false, label: 'welcome', domain_name: REGIONAL });
  });

  it('rejects an invalid domain_name and changes nothing', () => {
    const before = structuredClone(tracked);
    expectInvalid(
      () => trackingOnUpdate(tracked, { domain_name: 'a.com/x', opens: false }, REGIONAL),
      'without a path',
    );
    expectInvalid(
      () => trackingOnUpdate(untracked, { domain_name: '10.0.0.1', opens: false, links: false }, REGIONAL),
      'IP address',
    );
    expect(tracked).toEqual(before);
  });

  it('does not mutate the existing settings', () => {
    const before = structuredClone(tracked);
    trackingOnUpdate(tracked, { opens: false, links: false, label: 'x' }, REGIONAL);
    expect(tracked).toEqual(before);
  });
});
