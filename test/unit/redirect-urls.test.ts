import { describe, expect, it } from 'vitest';
import { checkPlatformSettings, lookupForms, parseOrigin, parseRedirectUrl } from '#shared/applications/redirect-urls';
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
  ] as [RedirectPlatform, string][])('accepts %s %s', (platform, url) => {
    // Act
    const parsed = parseRedirectUrl(url, platform);
    // Assess
    expect(parsed.href).toBe(new URL(url).href);
  });

  it.each([
    ['web', 'http://app.example.com/cb', /'url' must use https; http is allowed only to localhost, 127.0.0.1 or \[::1\]/],
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
  ] as [RedirectPlatform, string, RegExp][])('refuses %s %s', (platform, url, message) => {
    expect(refusal(() => parseRedirectUrl(url, platform))).toMatch(message);
  });

  it('gives desktop URIs on loopback http a port-free form, and no other platform or scheme', () => {
    expect(parseRedirectUrl('http://127.0.0.1:49152/cb', 'desktop')).toEqual({ href: 'http://127.0.0.1:49152/cb', loopback: 'http://127.0.0.1/cb' });
    expect(parseRedirectUrl('http://127.0.0.1:49152/cb', 'web').loopback).toBeUndefined();
    expect(parseRedirectUrl('https://app.example.com:8443/cb', 'desktop').loopback).toBeUndefined();
  });
});

describe('Function: lookupForms', () => {
  it('gives the forms an OAuth request is looked up by, and none for what cannot be registered', () => {
    expect(lookupForms('HTTPS://App.Example.com:443/cb')).toEqual({ href: 'https://app.example.com/cb' });
    expect(lookupForms('http://localhost:5000/cb')).toEqual({ href: 'http://localhost:5000/cb', loopback: 'http://localhost/cb' });
    for (const bad of ['https://a.example/cb#x', 'not a url', 'https://u:p@a.example/', '']) expect(lookupForms(bad), bad).toBeUndefined();
  });
});

describe('Function: parseOrigin', () => {
  it('accepts an origin and normalizes it', () => {
    expect(parseOrigin('https://App.Example.com')).toBe('https://app.example.com');
    expect(parseOrigin('https://app.example.com/')).toBe('https://app.example.com');
    expect(parseOrigin('http://localhost:3000')).toBe('http://localhost:3000');
  });

  it.each(['app.example.com', 'https://app.example.com/path', 'https://app.example.com?x=1', 'http://app.example.com', 'https://u:p@app.example.com'])('refuses %s', (origin) => {
    expect(refusal(() => parseOrigin(origin))).toMatch(/'settings.origin' must be an origin such as https:\/\/app.example.com/);
  });
});

describe('Function: checkPlatformSettings', () => {
  it('requires the settings a platform needs and refuses those of others, naming them', () => {
    expect(refusal(() => checkPlatformSettings('js', {}))).toBe("'settings.origin' is required for platform js");
    expect(refusal(() => checkPlatformSettings('android', { package_name: 'com.example.app' }))).toBe("'settings.sha1_certificate_fingerprint' is required for platform android");
    expect(refusal(() => checkPlatformSettings('web', { origin: 'https://a.example' }))).toBe("'settings.origin' does not apply to platform web; it takes no settings");
    expect(refusal(() => checkPlatformSettings('ios', { bundle_id: 'com.example.app', package_name: 'com.example.app' }))).toMatch(
      /^'settings.package_name' does not apply to platform ios; it takes settings.bundle_id, settings.app_store_id, settings.team_id$/,
    );
    expect(checkPlatformSettings('js', { origin: 'https://a.example/' })).toEqual({ origin: 'https://a.example' });
  });
});
