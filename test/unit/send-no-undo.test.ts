import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The send paths put nothing back in a catch block: a send's draft and quota unit are claimed by
 * conditional writes that lapse and converted by the Sent copy's commit (shared/mailbox/send.ts
 * claimsOf), so a failure leaves nothing to restore (test/integration/send-faults.test.ts kills sends
 * between their steps to show it). Here, the source: no catch block and no rejection handler of these
 * files touches a draft or the daily quota.
 */
const FILES = [
  'shared/mailbox/draft-send.ts',
  'shared/imap/draft-send.ts',
  'shared/mailbox/send.ts',
  'shared/agent/itip.ts',
  'shared/mailbox/scheduled-sending.ts',
];

/** What would put a draft or a quota unit back (or take one) from a handler. */
const TOUCHES_CLAIMS =
  /\b(refund\w*|restore\w*|insertDraft|replaceDraft|removeDraft|claimDraft|draftClaim\w*|draftSentItems|releaseDraftClaim|consume\w*Quota|holdSendQuota|releaseSendQuotaHold|sendQuotaCommitItem|giveUp|claims?\.\w+)\b/;

/** The text of every `catch (…) { … }` block and `.catch(…)` call of `source`. */
function handlers(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/\bcatch\s*(?:\([^)]*\))?\s*\{|\.catch\(/g)) {
    const [open, close] = match[0].endsWith('{') ? ['{', '}'] : ['(', ')'];
    let depth = 1;
    let end = match.index + match[0].length;
    for (; end < source.length && depth > 0; end++) {
      if (source[end] === open) depth++;
      else if (source[end] === close) depth--;
    }
    found.push(source.slice(match.index, end));
  }
  return found;
}

describe('Function: the send paths', () => {
  it('finds the handlers it checks (sentinel: an undo by catch is seen)', () => {
    // Prepare: the shape the send paths had.
    const undo =
      'try {\n  await send();\n} catch (error) {\n  if (nothingLeft(error)) await sending.refundSendQuota(grant.id, day);\n  await restore();\n  throw error;\n}\nconst x = await f().catch(async (error) => {\n  await restore();\n});';

    // Act
    const found = handlers(undo);

    // Assess
    expect(found).toHaveLength(2);
    expect(found.every((text) => TOUCHES_CLAIMS.test(text))).toBe(true);
    // And the real files have handlers to look at (withIdempotency's, the relay's).
    expect(handlers(readFileSync('shared/mailbox/send.ts', 'utf8')).length).toBeGreaterThan(0);
  });

  it.each(FILES)('%s: no catch block puts a draft or a quota unit back', (file) => {
    // Act
    const touching = handlers(readFileSync(file, 'utf8')).filter((text) => TOUCHES_CLAIMS.test(text));

    // Assess
    expect(touching).toEqual([]);
  });
});
