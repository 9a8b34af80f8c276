import { describe, expect, it } from 'vitest';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { folderRef, graphListing, wellKnownFolder } from '#shared/microsoft/graph-query';

/** A message listing's filters as Graph's `$filter` or `$search` (shared/microsoft/graph-query.ts). */
describe('Function: graphListing', () => {
  it('puts the flags, times, senders and thread in one $filter, ANDed, and the folder in the path', () => {
    // Prepare
    const query = {
      in: 'AAMkADfolder=',
      unread: true,
      starred: false,
      has_attachment: true,
      received_after: 1_700_000_000,
      received_before: 1_800_000_000,
      from: 'ann@example.com',
      thread_id: 'AAQkADconv=',
      limit: 20,
      select: 'id',
      fields: 'standard' as const,
    };

    // Act
    const listing = graphListing(query);

    // Assess
    expect(listing).toEqual({
      folder: 'AAMkADfolder=',
      filter:
        "isRead eq false and flag/flagStatus ne 'flagged' and hasAttachments eq true" +
        ' and receivedDateTime ge 2023-11-14T22:13:21Z and receivedDateTime lt 2027-01-15T08:00:00Z' +
        " and from/emailAddress/address eq 'ann@example.com' and conversationId eq 'AAQkADconv='",
    });
  });

  it('ORs several senders in brackets, and doubles quotes in OData literals', () => {
    // Act
    const several = graphListing({ from: 'a@x.org, b@x.org', starred: true });
    const quoted = graphListing({ from: "o'brien@x.org" });

    // Assess
    expect(several.filter).toBe(
      "flag/flagStatus eq 'flagged' and (from/emailAddress/address eq 'a@x.org' or from/emailAddress/address eq 'b@x.org')",
    );
    expect(quoted.filter).toBe("from/emailAddress/address eq 'o''brien@x.org'");
  });

  it('searches (KQL) what $filter cannot say: subject, recipients, any address, with the sender among them', () => {
    // Act
    const listing = graphListing({ subject: 'quarterly plan', to: 'bob@x.org', from: 'ann@x.org', in: 'inbox' });
    const everyone = graphListing({ any_email: 'a@x.org, b@x.org', cc: 'c@x.org', bcc: 'd@x.org' });

    // Assess
    expect(listing).toEqual({ folder: 'inbox', search: '"subject:"quarterly plan" from:ann@x.org to:bob@x.org"' });
    expect(everyone.search).toBe('"cc:c@x.org bcc:d@x.org (participants:a@x.org OR participants:b@x.org)"');
    expect(everyone.filter).toBeUndefined();
  });

  it('drops quotes and brackets a value could break out of its KQL term with', () => {
    // Act
    const listing = graphListing({ subject: 'a" OR from:eve "b' });

    // Assess
    expect(listing.search).toBe('"subject:"a OR from:eve b""');
    expect(() => graphListing({ subject: '"()"' })).toThrow(InvalidRequestError);
  });

  it('passes search_query_native as $search, quoted as Graph takes it, and alone', () => {
    // Act
    const plain = graphListing({ search_query_native: 'pizza from:ann', in: 'sent' });
    const quoted = graphListing({ search_query_native: '"pizza"' });

    // Assess
    expect(plain).toEqual({ folder: 'sentitems', search: '"pizza from:ann"' });
    expect(quoted).toEqual({ search: '"pizza"' });
    expect(() => graphListing({ search_query_native: 'pizza', unread: true, subject: 'x' })).toThrow(
      /'search_query_native' is Graph's \$search.*'subject', 'unread'|'search_query_native' is Graph's \$search.*'unread', 'subject'/,
    );
  });

  it('refuses a search with filters only $filter can say, naming both groups, never a wider listing', () => {
    // Act
    const refused = () => graphListing({ subject: 'plans', unread: true, received_after: 1 });

    // Assess
    expect(refused).toThrow(InvalidRequestError);
    expect(refused).toThrow(
      "'subject' can only be searched on a microsoft grant (Graph's $search), and a search takes no 'unread', 'received_after' (Graph's $filter)",
    );
    expect(() => graphListing({ to: 'a@x.org', has_attachment: false })).toThrow(/'has_attachment'/);
    expect(() => graphListing({ cc: 'a@x.org', thread_id: 'AAQk=' })).toThrow(/'thread_id'/);
  });

  it('answers metadata_pair from our store alone, and refuses provider filters beside it', () => {
    // Act
    const alone = graphListing({ metadata_pair: 'key1:x', limit: 5 });

    // Assess
    expect(alone).toEqual({});
    expect(() => graphListing({ metadata_pair: 'key1:x', from: 'a@x.org' })).toThrow(
      /'metadata_pair' cannot be combined with provider filters \('from'\)/,
    );
    expect(() => graphListing({ metadata_pair: 'key1:x', in: 'inbox' })).toThrow(/'in'/);
  });

  it('lists the whole mailbox with no filter, and counts query_imap=false as none', () => {
    // Act
    const listing = graphListing({ limit: 10, query_imap: false });

    // Assess
    expect(listing).toEqual({});
  });

  it('bounds the addresses of one filter', () => {
    // Prepare
    const many = Array.from({ length: 26 }, (_, i) => `p${i}@x.org`).join(',');

    // Act
    const refused = () => graphListing({ from: many });

    // Assess
    expect(refused).toThrow(/more than 25/);
    expect(() => graphListing({ to: ' , ' })).toThrow(/names no address/);
  });
});

describe('Function: folderRef', () => {
  it("takes Graph's well-known names and ours for them, any case, and Graph IDs as they are", () => {
    // Act
    const refs = ['Inbox', 'sent', 'TRASH', 'spam', 'junk', 'sentitems', 'AAMkAD_x-y='].map(folderRef);

    // Assess
    expect(refs).toEqual(['inbox', 'sentitems', 'deleteditems', 'junkemail', 'junkemail', 'sentitems', 'AAMkAD_x-y=']);
    expect(wellKnownFolder('AAMkAD=')).toBeUndefined();
  });

  it('refuses what is no Graph ID before it can reach a path', () => {
    // Act
    const refused = () => folderRef('../messages');

    // Assess
    expect(refused).toThrow(NotFoundError);
    expect(() => folderRef('a/b')).toThrow(NotFoundError);
    expect(() => graphListing({ in: 'x?y' })).toThrow(NotFoundError);
  });
});
