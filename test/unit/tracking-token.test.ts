import { describe, expect, it } from 'vitest';
import { newId } from '#shared/ids';
import { signTarget, verifyTarget } from '#shared/tracking/token';

/** The tokens of tracking URLs: a grant's message, or a transactional send's (no grant); anything altered is refused. */
const applicationId = newId('application');
const grantId = newId('grant');
const messageId = newId('message');

const payloadOf = (token: string) =>
  JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8')) as Record<string, unknown>;
const withPayload = (token: string, payload: Record<string, unknown>) =>
  `${Buffer.from(JSON.stringify(payload)).toString('base64url')}${token.slice(token.indexOf('.'))}`;

describe('tracking tokens', () => {
  it("name a grant's message, and read back as signed", async () => {
    const token = await signTarget({ kind: 'open', applicationId, grantId, messageId });
    expect(await verifyTarget(token, 'open')).toEqual({ kind: 'open', applicationId, grantId, messageId });
    expect(await verifyTarget(token, 'link')).toBeUndefined();
  });

  it('name a transactional send without a grant', async () => {
    const token = await signTarget({ kind: 'link', applicationId, messageId, index: 2, url: 'https://example.com/a' });
    expect(payloadOf(token)).not.toHaveProperty('g');
    expect(await verifyTarget(token, 'link')).toEqual({
      kind: 'link',
      applicationId,
      messageId,
      index: 2,
      url: 'https://example.com/a',
    });
  });

  it('are refused when anything signed is changed: a grant added or removed, a target moved', async () => {
    const transactional = await signTarget({ kind: 'open', applicationId, messageId });
    const granted = await signTarget({ kind: 'open', applicationId, grantId, messageId });
    const link = await signTarget({
      kind: 'link',
      applicationId,
      grantId,
      messageId,
      index: 0,
      url: 'https://a.test/',
    });
    expect(await verifyTarget(withPayload(transactional, { ...payloadOf(transactional), g: grantId }), 'open')).toBe(
      undefined,
    );
    const { g: _grant, ...withoutGrant } = payloadOf(granted);
    expect(await verifyTarget(withPayload(granted, withoutGrant), 'open')).toBeUndefined();
    expect(await verifyTarget(withPayload(link, { ...payloadOf(link), u: 'https://evil.test/' }), 'link')).toBe(
      undefined,
    );
    expect(await verifyTarget(`${transactional}x`, 'open')).toBeUndefined();
  });
});
