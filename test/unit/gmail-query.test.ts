import { describe, expect, it } from 'vitest';
import { gmailListing } from '#shared/google/gmail-query';
import { checkProviderParameters } from '#shared/registries/parameters';
import { InvalidRequestError } from '#shared/errors';

/** A message listing's filters in Gmail's search syntax (shared/google/gmail-query.ts). */
describe('gmailListing', () => {
  it('puts the folder in labelIds and the rest in q, ANDed', () => {
    expect(
      gmailListing({
        in: 'Label_7',
        subject: 'quarterly plan',
        from: 'ann@example.com',
        unread: true,
        starred: false,
        has_attachment: true,
        received_after: 1_700_000_000,
        received_before: 1_800_000_000,
        limit: 20,
        select: 'id',
      }),
    ).toEqual({
      labelIds: ['Label_7'],
      q: 'subject:"quarterly plan" from:ann@example.com is:unread -is:starred has:attachment after:1700000000 before:1800000000',
    });
  });

  it('ORs several addresses, and any_email over from, to, cc and bcc', () => {
    expect(gmailListing({ to: 'a@x.org, b@x.org' }).q).toBe('{to:a@x.org to:b@x.org}');
    expect(gmailListing({ any_email: 'a@x.org' }).q).toBe('{from:a@x.org to:a@x.org cc:a@x.org bcc:a@x.org}');
  });

  it('keeps search_query_native as Gmail syntax, bracketed, beside the other filters', () => {
    expect(gmailListing({ search_query_native: 'from:bob OR label:work', unread: true }).q).toBe(
      'is:unread (from:bob OR label:work)',
    );
  });

  it('drops quotes and brackets a value could break out of the operator with', () => {
    expect(gmailListing({ subject: 'a" OR from:eve "b' }).q).toBe('subject:"a OR from:eve b"');
    expect(() => gmailListing({ subject: '""' })).toThrow(InvalidRequestError);
  });

  it('refuses what Gmail cannot express, naming it', () => {
    // query_imap is refused for google grants before any provider is asked (shared/registries/parameters.ts);
    // query_imap=false asks for nothing and is no filter.
    expect(() => checkProviderParameters('google', { query_imap: true })).toThrow(/'query_imap' applies to IMAP/);
    expect(() => checkProviderParameters('google', { query_imap: false })).not.toThrow();
    expect(() => gmailListing({ thread_id: 'abc', query_imap: false })).not.toThrow();
    expect(() => gmailListing({ thread_id: 'abc', unread: true })).toThrow(
      /'thread_id' takes no other filter.*'unread'/,
    );
    expect(() => gmailListing({ metadata_pair: 'key1:x', from: 'a@x.org' })).toThrow(
      /'metadata_pair' cannot be combined with provider filters \('from'\)/,
    );
    expect(() => gmailListing({ to: Array.from({ length: 26 }, (_, i) => `p${i}@x.org`).join(',') })).toThrow(
      /more than 25/,
    );
  });

  it('asks Gmail for everything when nothing filters', () => {
    expect(gmailListing({ limit: 50, page_token: 'x' })).toEqual({});
    expect(gmailListing({ thread_id: 'abc', limit: 5 })).toEqual({});
    expect(gmailListing({ metadata_pair: 'key1:x' })).toEqual({});
  });
});
