import { describe, expect, it } from 'vitest';
import { parseGrantRef } from '#shared/grants/resolve';

describe('Function: parseGrantRef', () => {
  it.each([
    ['grant_01jd6abcdefghjkmnpqrstvwxy', { kind: 'id', value: 'grant_01jd6abcdefghjkmnpqrstvwxy' }],
    ['grant:grant_01jd6abcdefghjkmnpqrstvwxy', { kind: 'id', value: 'grant_01jd6abcdefghjkmnpqrstvwxy' }],
    ['ava@example.com', { kind: 'email', value: 'ava@example.com' }],
    ['email:ava@example.com', { kind: 'email', value: 'ava@example.com' }],
    ['external:crm-42', { kind: 'external', value: 'crm-42' }],
    ['external:a@b', { kind: 'external', value: 'a@b' }],
    ['me', { kind: 'me' }],
  ])('parses %s', (raw, ref) => {
    expect(parseGrantRef(raw)).toEqual(ref);
  });
});
