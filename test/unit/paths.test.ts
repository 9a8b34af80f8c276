import { describe, expect, it } from 'vitest';
import { compareSpecificity, decodeParam, matchTemplate } from '#shared/http/paths';

describe('Function: decodeParam', () => {
  it('decodes percent escapes once', () => {
    expect(decodeParam('grant%3Aabc')).toBe('grant:abc');
    expect(decodeParam('user%40x.com')).toBe('user@x.com');
    expect(decodeParam('draft%23one')).toBe('draft#one');
  });

  it('leaves values without escapes, and invalid escapes, unchanged', () => {
    expect(decodeParam('user@x.com')).toBe('user@x.com');
    expect(decodeParam('100%')).toBe('100%');
    expect(decodeParam('%E0%A4%A')).toBe('%E0%A4%A');
  });
});

describe('Function: matchTemplate', () => {
  it('captures and decodes parameters', () => {
    expect(matchTemplate('/v3/grants/{grant_id}', '/v3/grants/user%40x.com')).toEqual({ grant_id: 'user@x.com' });
    expect(matchTemplate('/v3/grants/{grant_id}/messages/{id}', '/v3/grants/g/messages/m%2Fn')).toEqual({
      grant_id: 'g',
      id: 'm/n',
    });
  });

  it('does not match other shapes or empty segments', () => {
    expect(matchTemplate('/v3/grants/{grant_id}', '/v3/grants')).toBeUndefined();
    expect(matchTemplate('/v3/grants/{grant_id}', '/v3/grants/')).toBeUndefined();
    expect(matchTemplate('/v3/grants/{grant_id}', '/v3/webhooks/x')).toBeUndefined();
  });
});

describe('Function: compareSpecificity', () => {
  it('puts literal segments before parameters, as API Gateway routes them', () => {
    const templates = [
      '/v3/grants/{g}/messages/{id}',
      '/v3/grants/{g}/messages/send',
      '/v3/grants/{g}/messages/schedules',
      '/v3/grants/{g}',
    ];
    const sorted = [...templates].sort(compareSpecificity);
    expect(sorted.indexOf('/v3/grants/{g}/messages/send')).toBeLessThan(sorted.indexOf('/v3/grants/{g}/messages/{id}'));
    expect(sorted.indexOf('/v3/grants/{g}/messages/schedules')).toBeLessThan(
      sorted.indexOf('/v3/grants/{g}/messages/{id}'),
    );
  });
});
