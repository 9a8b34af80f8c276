import { describe, expect, it } from 'vitest';
import { newId, parseId } from '#shared/ids';

describe('Function: newId', () => {
  it('creates prefixed, lowercase, 26-character ULID bodies', () => {
    const id = newId('grant');
    expect(id).toMatch(/^grant_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(parseId('grant', id)).toBe(id);
  });

  it('sorts by creation time', () => {
    const earlier = newId('application', Date.UTC(2026, 0, 1));
    const later = newId('application', Date.UTC(2026, 0, 2));
    expect(earlier < later).toBe(true);
  });

  it('is unique within the same millisecond', () => {
    const now = Date.now();
    const ids = new Set(Array.from({ length: 1000 }, () => newId('notification', now)));
    expect(ids.size).toBe(1000);
  });
});

describe('Function: parseId', () => {
  it.each([
    'app_01jd6abcdefghjkmnpqrstvwxy',
    'grant_01JD6ABCDEFGHJKMNPQRSTVWXY',
    'grant_01jd6',
    'grant_01jd6abcdefghjkmnpqrstvwxi',
    '',
  ])('rejects %s as a grant ID', (value) => {
    expect(parseId('grant', value)).toBeUndefined();
  });
});
