import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '#shared/cursor';

const expect_ = { pk: 'app#app_1', skPrefix: 'grant#' };

describe('Function: decodeCursor', () => {
  it('round-trips a key of the expected partition', () => {
    const key = { pk: 'app#app_1', sk: 'grant#grant_1' };
    expect(decodeCursor(encodeCursor(key), expect_)).toEqual(key);
  });

  it.each([
    ['another partition', encodeCursor({ pk: 'app#app_2', sk: 'grant#grant_1' })],
    ['another entity', encodeCursor({ pk: 'app#app_1', sk: 'email#x' })],
    ['extra attributes', encodeCursor({ pk: 'app#app_1', sk: 'grant#g', gsi1pk: 'x' })],
    ['not JSON', Buffer.from('nope').toString('base64url')],
    ['an array', Buffer.from('[1]').toString('base64url')],
    ['object values', Buffer.from('{"pk":{"S":"x"},"sk":"grant#"}').toString('base64url')],
  ])('rejects a token naming %s', (_name, token) => {
    expect(() => decodeCursor(token, expect_)).toThrow(/page_token/);
  });
});
