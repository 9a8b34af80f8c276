import { describe, expect, it } from 'vitest';
import {
  checkPlatformSettings,
  lookupKeys,
  parseOrigin,
  parseRedirectUrl,
  redirectUriMatches,
  withoutLoopbackPort,
} from '#shared/applications/redirect-urls';
import { InvalidRequestError } from '#shared/errors';
import type { RedirectPlatform } from '#schemas/applications';

/** The redirect URI rules, per platform, without the API around them. */
const refusal = (act: () => unknown): string => {
  try {
    act();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return (error as Error).message;
  }
  throw new Error('expected a 400');
};

describe('Function: parseRedirectUrl', () => {
  it.each([
    ['web', 'https://app.example.com/callback'],
    ['web', 'https://app.example.com/callback?tenant=1'],
    ['web', 'http://localhost:3000/callback'],
    ['web', 'http://127.0.0.1/cb'],
    ['js', 'http://[::1]:8080/cb'],
    ['desktop', 'com.example.app:/oauth2redirect'],
    ['desktop', 'myapp://callback'],
    ['ios', 'com.example.app://auth'],
    ['android', 'https://app.example.com/android'],
    ['web', 'HTTPS://App.Example.com:443/Callback/'],
    ['web', 'https://app.example.com/a..b/...'],
    ['web', 'https://app.example.com/cb?next=/../x'],
    ['desktop', 'HTTP://LocalHost:8080/cb'],
  ] as [RedirectPlatform, string][])('accepts %s %s, as written', (platform, url) => {
    // Act
    const parsed = parseRedirectUrl(url, platform);
    // Assess: the string itself is what is kept and compared, never its parsed form.
    expect(parsed.url).toBe(url);
  });

  it.each([
    [
      'web',
      'http://app.example.com/cb',
      /'url' must use https; http is allowed only to localhost, 127.0.0.1 or \[::1\]/,
    ],
    ['web', 'https://app.example.com/cb#frag', /'url' must not contain a fragment/],
    ['web', 'https://app.example.com/cb#', /'url' must not contain a fragment/],
    ['web', 'https://user:pw@app.example.com/cb', /'url' must not contain user information/],
    ['web', 'https://app.example.com/a b', /'url' must be printable ASCII without spaces/],
    ['web', 'https://exämple.com/cb', /'url' must be printable ASCII/],
    ['web', '/relative/callback', /'url' must be an absolute URL/],
    ['web', 'com.example.app:/cb', /custom schemes are for platforms desktop, ios and android/],
    ['js', 'myapp://cb', /custom schemes are for platforms desktop, ios and android/],
    ['desktop', 'javascript:alert(1)', /must not use the scheme 'javascript'/],
    ['desktop', 'file:///etc/passwd', /must not use the scheme 'file'/],
    ['ios', 'data:text/html,hi', /must not use the scheme 'data'/],
    ['android', 'myapp:', /must have a path after 'myapp:'/],
    ['desktop', 'http://192.168.1.10/cb', /'url' must use https; http is allowed only to localhost/],
    ['web', `https://app.example.com/${'a'.repeat(2048)}`, /'url' must be at most 2048 characters/],
    ['web', 'http://127.1/cb', /'url' must use https; http is allowed only to localhost, 127.0.0.1 or \[::1\]/],
  ] as [RedirectPlatform, string, RegExp][])('refuses %s %s', (platform, url, message) => {
    expect(refusal(() => parseRedirectUrl(url, platform))).toMatch(message);
  });

  const DOT_SEGMENTS =
    /^'url' must not contain dot segments in its path \('\/\.\/' or '\/\.\.\/', also percent-encoded as %2e\): browsers resolve them, so they would follow another URL than the one registered; register the URL they lead to/;
  it.each([
    ['web', 'http://127.0.0.1:4999/x/../a-cb', 'http://127.0.0.1:4999/a-cb'],
    ['web', 'https://app.example.com/./cb', 'https://app.example.com/cb'],
    ['web', 'https://app.example.com/cb/.', 'https://app.example.com/cb/'],
    ['web', 'https://app.example.com/cb/..', 'https://app.example.com/'],
    ['web', 'https://app.example.com/cb/..?x=1', 'https://app.example.com/?x=1'],
    ['web', 'http://127.0.0.1:4999/x/%2e%2e/a-cb', 'http://127.0.0.1:4999/a-cb'],
    ['web', 'http://127.0.0.1:4999/x/%2E%2E/a-cb', 'http://127.0.0.1:4999/a-cb'],
    ['web', 'https://app.example.com/x/.%2E/cb', 'https://app.example.com/cb'],
    ['web', 'https://app.example.com/x/%2e./cb', 'https://app.example.com/cb'],
    ['web', 'https://app.example.com/%2e/cb', 'https://app.example.com/cb'],
    ['desktop', 'myapp://callback/x/../cb', 'myapp://callback/cb'],
    ['ios', 'com.example.app:/x/../cb', 'com.example.app:/cb'],
  ] as [RedirectPlatform, string, string][])(
    'refuses dot segments in %s %s, naming the URL they lead to',
    (platform, url, resolved) => {
      // Act
      const message = refusal(() => parseRedirectUrl(url, platform));
      // Assess
      expect(message).toMatch(DOT_SEGMENTS);
      expect(message).toContain(`(${resolved})`);
    },
  );

  it('refuses dot segments the parser keeps, without naming a URL', () => {
    expect(refusal(() => parseRedirectUrl('myapp:cb/../x', 'desktop'))).toMatch(new RegExp(`${DOT_SEGMENTS.source}$`));
  });

  it.each([
    ['web', 'http://127.0.0.1:4999\\a-cb'],
    ['web', 'https://app.example.com\\cb'],
    ['web', 'https://app.example.com/a\\b'],
    ['web', 'https://app.example.com/cb?x=\\'],
    ['desktop', 'myapp:\\cb'],
  ] as [RedirectPlatform, string][])('refuses a backslash in %s %s', (platform, url) => {
    expect(refusal(() => parseRedirectUrl(url, platform))).toBe(
      "'url' must not contain a backslash (\\): browsers read it as '/', so they would follow another URL than the one registered; write '/'",
    );
  });

  it('gives desktop URIs on loopback http a port-free form, cut out of the string as written, and no other platform or scheme', () => {
    expect(parseRedirectUrl('http://127.0.0.1:49152/cb', 'desktop')).toEqual({
      url: 'http://127.0.0.1:49152/cb',
      loopback: 'http://127.0.0.1/cb',
    });
    expect(parseRedirectUrl('HTTP://LocalHost:49152/CB', 'desktop')).toEqual({
      url: 'HTTP://LocalHost:49152/CB',
      loopback: 'HTTP://LocalHost/CB',
    });
    expect(parseRedirectUrl('http://[::1]:8080', 'desktop')).toEqual({
      url: 'http://[::1]:8080',
      loopback: 'http://[::1]',
    });
    expect(parseRedirectUrl('http://127.0.0.1:49152/cb', 'web').loopback).toBeUndefined();
    expect(parseRedirectUrl('https://app.example.com:8443/cb', 'desktop').loopback).toBeUndefined();
  });
});

describe('Function: withoutLoopbackPort', () => {
  it('cuts the port out of an http URI to a loopback host, changing nothing else', () => {
    expect(withoutLoopbackPort('http://127.0.0.1:4999/a-cb')).toBe('http://127.0.0.1/a-cb');
    expect(withoutLoopbackPort('http://127.0.0.1/a-cb')).toBe('http://127.0.0.1/a-cb');
    expect(withoutLoopbackPort('http://localhost:/cb?x=1')).toBe('http://localhost/cb?x=1');
    expect(withoutLoopbackPort('http://localhost:80?x=1')).toBe('http://localhost?x=1');
    expect(withoutLoopbackPort('HTTP://[::1]:5/Cb/')).toBe('HTTP://[::1]/Cb/');
    expect(withoutLoopbackPort('http://127.0.0.1:4999/x/%2e%2e/a-cb')).toBe('http://127.0.0.1/x/%2e%2e/a-cb');
    for (const other of [
      'https://127.0.0.1:4999/cb',
      'http://127.1:4999/cb',
      'http://localhost.example:1/cb',
      'http://127.0.0.1:4999@evil.example/',
      'http://127.0.0.1:4999\\a-cb',
      'myapp://127.0.0.1:1/cb',
    ]) {
      expect(withoutLoopbackPort(other), other).toBeUndefined();
    }
  });
});

describe('Function: redirectUriMatches', () => {
  const web = { url: 'http://127.0.0.1:4999/a-cb', platform: 'web' };
  const desktop = { url: 'http://127.0.0.1:4999/d-cb', platform: 'desktop' };

  it.each([
    'http://127.0.0.1:4999/x/../a-cb',
    'http://127.0.0.1:4999/x/%2e%2e/a-cb',
    'http://127.0.0.1:4999\\a-cb',
    'http://127.0.0.1:4999/./a-cb',
    'HTTP://127.0.0.1:4999/a-cb',
    'http://127.0.0.1:4999/a-cb/',
    'http://127.0.0.1:4999/a%2Dcb',
    'http://localhost:4999/a-cb',
    'http://127.0.0.1:5000/a-cb',
    'http://127.0.0.1:4999/a-cb?x=1',
  ])('does not match %s with the web URI http://127.0.0.1:4999/a-cb', (sent) => {
    expect(redirectUriMatches(web, sent)).toBe(false);
  });

  it('matches the very string registered', () => {
    expect(redirectUriMatches(web, 'http://127.0.0.1:4999/a-cb')).toBe(true);
    expect(
      redirectUriMatches({ url: 'HTTPS://App.Example.com:443/cb', platform: 'web' }, 'HTTPS://App.Example.com:443/cb'),
    ).toBe(true);
    expect(
      redirectUriMatches({ url: 'HTTPS://App.Example.com:443/cb', platform: 'web' }, 'https://app.example.com/cb'),
    ).toBe(false);
  });

  it('matches a desktop loopback URI with any port, or none, and nothing else', () => {
    for (const sent of [
      'http://127.0.0.1:4999/d-cb',
      'http://127.0.0.1:51234/d-cb',
      'http://127.0.0.1/d-cb',
      'http://127.0.0.1:/d-cb',
    ])
      expect(redirectUriMatches(desktop, sent), sent).toBe(true);
    for (const sent of [
      'http://127.0.0.1:51234/x/../d-cb',
      'http://127.0.0.1:51234/d-cb/',
      'http://localhost:51234/d-cb',
      'HTTP://127.0.0.1:51234/d-cb',
      'https://127.0.0.1:51234/d-cb',
      'http://127.0.0.1:51234\\d-cb',
    ]) {
      expect(redirectUriMatches(desktop, sent), sent).toBe(false);
    }
    expect(
      redirectUriMatches({ url: 'https://app.example.com/cb', platform: 'desktop' }, 'https://app.example.com:8443/cb'),
    ).toBe(false);
  });
});

describe('Function: lookupKeys', () => {
  it('gives the guard values an OAuth request is looked up by: the string itself, and the parsed forms older registrations are keyed by', () => {
    expect(lookupKeys('https://app.example.com/cb')).toEqual({ urls: ['https://app.example.com/cb'], loopbacks: [] });
    expect(lookupKeys('HTTPS://App.Example.com:443/cb')).toEqual({
      urls: ['HTTPS://App.Example.com:443/cb', 'https://app.example.com/cb'],
      loopbacks: [],
    });
    expect(lookupKeys('http://localhost:5000/cb')).toEqual({
      urls: ['http://localhost:5000/cb'],
      loopbacks: ['http://localhost/cb'],
    });
    expect(lookupKeys('http://127.0.0.1:4999/x/../a-cb')).toEqual({
      urls: ['http://127.0.0.1:4999/x/../a-cb', 'http://127.0.0.1:4999/a-cb'],
      loopbacks: ['http://127.0.0.1/x/../a-cb', 'http://127.0.0.1/a-cb'],
    });
    for (const bad of ['https://a.example/cb#x', 'not a url', 'https://u:p@a.example/', ''])
      expect(lookupKeys(bad), bad).toBeUndefined();
  });
});

describe('Function: parseOrigin', () => {
  it('accepts an origin and normalizes it', () => {
    expect(parseOrigin('https://App.Example.com')).toBe('https://app.example.com');
    expect(parseOrigin('https://app.example.com/')).toBe('https://app.example.com');
    expect(parseOrigin('http://localhost:3000')).toBe('http://localhost:3000');
  });

  it.each([
    'app.example.com',
    'https://app.example.com/path',
    'https://app.example.com?x=1',
    'http://app.example.com',
    'https://u:p@app.example.com',
  ])('refuses %s', (origin) => {
    expect(refusal(() => parseOrigin(origin))).toMatch(
      /'settings.origin' must be an origin such as https:\/\/app.example.com/,
    );
  });
});

describe('Function: checkPlatformSettings', () => {
  it('requires the settings a platform needs and refuses those of others, naming them', () => {
    expect(refusal(() => checkPlatformSettings('js', {}))).toBe("'settings.origin' is required for platform js");
    expect(refusal(() => checkPlatformSettings('android', { package_name: 'com.example.app' }))).toBe(
      "'settings.sha1_certificate_fingerprint' is required for platform android",
    );
    expect(refusal(() => checkPlatformSettings('web', { origin: 'https://a.example' }))).toBe(
      "'settings.origin' does not apply to platform web; it takes no settings",
    );
    expect(
      refusal(() => checkPlatformSettings('ios', { bundle_id: 'com.example.app', package_name: 'com.example.app' })),
    ).toMatch(
      /^'settings.package_name' does not apply to platform ios; it takes settings.bundle_id, settings.app_store_id, settings.team_id$/,
    );
    expect(checkPlatformSettings('js', { origin: 'https://a.example/' })).toEqual({ origin: 'https://a.example' });
  });
});
