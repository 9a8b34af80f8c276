import { describe, expect, it } from 'vitest';
import {
  foldLine,
  MalformedVCard,
  parseVCard,
  writeContactVCard,
  writeGroupVCard,
  type ContactFields,
} from '#shared/dav/vcard';

/**
 * vCard reading and writing (shared/dav/vcard.ts): round trips in both versions, folding and
 * escaping, cards as iCloud, Google and vCard 4 producers write them, Apple and vCard 4 groups, and
 * input that is no vCard.
 */

const FULL: ContactFields = {
  given_name: 'Ann',
  middle_name: 'Marie',
  surname: "O'Neil; Smith",
  suffix: 'Jr.',
  nickname: 'Annie',
  birthday: '1985-04-12',
  company_name: 'Acme, Inc.',
  job_title: 'Chief \\ Engineer',
  manager_name: 'Bob Boss',
  office_location: 'Building 4, Room 2',
  notes: 'Line one\nLine two, with comma; and semicolon\\ and backslash',
  picture_url: 'https://example.org/ann.jpg',
  emails: [
    { email: 'ann@work.example', type: 'work' },
    { email: 'ann@home.example', type: 'home' },
    { email: 'ann@other.example', type: 'other' },
    { email: 'plain@example.org' },
  ],
  phone_numbers: [
    { number: '+1 555 0100', type: 'mobile' },
    { number: '+1 555 0101', type: 'work' },
    { number: '+1 555 0102', type: 'home' },
    { number: '+1 555 0103', type: 'other' },
  ],
  physical_addresses: [
    {
      type: 'work',
      street_address: '1 Main St\nSuite 5',
      city: 'Springfield',
      state: 'IL',
      postal_code: '62701',
      country: 'USA',
    },
    { type: 'home', city: 'Paris', country: 'France' },
  ],
  im_addresses: [
    { im_address: 'ann@jabber.example', type: 'jabber' },
    { im_address: 'ann.skype', type: 'skype' },
    { im_address: 'ann-fb', type: 'facebook' },
    { im_address: 'ann.y', type: 'yahoo' },
  ],
  web_pages: [
    { url: 'https://ann.example/?a=1,2;b', type: 'home' },
    { url: 'https://acme.example', type: 'work' },
    { url: 'https://blog.example' },
  ],
};

describe('vCard round trips', () => {
  for (const version of ['3.0', '4.0'] as const) {
    it(`keeps every field through write and read (vCard ${version})`, () => {
      const text = writeContactVCard('ann-1', FULL, { version, categories: ['Friends', 'A, B'] });
      expect(text).toContain(`VERSION:${version}`);
      expect(text.endsWith('\r\n')).toBe(true);
      const parsed = parseVCard(text);
      expect(parsed).toEqual({ kind: 'individual', uid: 'ann-1', fields: FULL, categories: ['Friends', 'A, B'] });
    });

    it(`writes a year-less birthday and reads it back (vCard ${version})`, () => {
      const text = writeContactVCard('b', { given_name: 'B', birthday: '--02-29' }, { version });
      expect(text).toContain(version === '3.0' ? 'BDAY;X-APPLE-OMIT-YEAR=1604:1604-02-29' : 'BDAY:--0229');
      expect(parseVCard(text)).toMatchObject({ fields: { birthday: '--02-29' } });
    });

    it(`writes groups and reads them back (vCard ${version})`, () => {
      const text = writeGroupVCard('g-1', 'Team; Core', ['a', 'b', 'a', '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f']);
      const parsed = parseVCard(
        version === '3.0'
          ? text
          : writeGroupVCard('g-1', 'Team; Core', ['a', 'b', 'a', '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f'], { version }),
      );
      expect(parsed).toEqual({
        kind: 'group',
        uid: 'g-1',
        name: 'Team; Core',
        members: ['a', 'b', '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f'],
      });
    });
  }

  it('writes 3.0 groups the Apple way and 4.0 groups with KIND and MEMBER', () => {
    const apple = writeGroupVCard('g', 'Family', ['x']);
    expect(apple).toContain('X-ADDRESSBOOKSERVER-KIND:group\r\n');
    expect(apple).toContain('X-ADDRESSBOOKSERVER-MEMBER:urn:uuid:x\r\n');
    const four = writeGroupVCard('g', 'Family', ['x'], { version: '4.0' });
    expect(four).toContain('KIND:group\r\n');
    expect(four).toContain('MEMBER:urn:uuid:x\r\n');
  });

  it('writes FN from the names, and from other fields when there are none', () => {
    expect(writeContactVCard('u', { given_name: 'Ann', surname: 'Lee', suffix: 'PhD' })).toContain(
      'FN:Ann Lee PhD\r\n',
    );
    expect(writeContactVCard('u', { company_name: 'Acme' })).toContain('FN:Acme\r\n');
    expect(writeContactVCard('u', { emails: [{ email: 'x@example.org' }] })).toContain('FN:x@example.org\r\n');
  });

  it('writes a UUID as urn:uuid: in 4.0 only, and reads it back bare', () => {
    const uuid = '5f1e7c36-8b1a-4a47-9c1f-2a3b4c5d6e7f';
    expect(writeContactVCard(uuid, { given_name: 'A' }, { version: '4.0' })).toContain(`UID:urn:uuid:${uuid}`);
    expect(writeContactVCard(uuid, { given_name: 'A' })).toContain(`UID:${uuid}\r\n`);
    expect(parseVCard(writeContactVCard(uuid, { given_name: 'A' }, { version: '4.0' })).uid).toBe(uuid);
  });

  it('turns an inline 3.0 photo into a data: URL and writes it back inline', () => {
    const data = Buffer.alloc(120, 7).toString('base64');
    const card = `BEGIN:VCARD\r\nVERSION:3.0\r\nUID:p\r\nFN:P\r\nPHOTO;ENCODING=b;TYPE=JPEG:${data}\r\nEND:VCARD\r\n`;
    const parsed = parseVCard(card);
    expect(parsed.kind === 'individual' && parsed.fields.picture_url).toBe(`data:image/jpeg;base64,${data}`);
    const written = writeContactVCard('p', { given_name: 'P', picture_url: `data:image/jpeg;base64,${data}` });
    expect(written).toContain('PHOTO;ENCODING=b;TYPE=JPEG:');
    expect(parseVCard(written)).toMatchObject({ fields: { picture_url: `data:image/jpeg;base64,${data}` } });
    expect(writeContactVCard('p', { picture_url: 'data:image/png;base64,AAAA' }, { version: '4.0' })).toContain(
      'PHOTO:data:image/png;base64,AAAA',
    );
  });
});

describe('vCard folding and escaping', () => {
  it('folds at 75 octets without splitting a UTF-8 character, and unfolds back', () => {
    const notes = 'Ünïcödé 日本語 '.repeat(30);
    const text = writeContactVCard('f', { given_name: 'F', notes });
    for (const line of text.split('\r\n')) expect(Buffer.byteLength(line, 'utf8')).toBeLessThanOrEqual(75);
    expect(text.split('\r\n').some((line) => line.startsWith(' '))).toBe(true);
    expect(parseVCard(text)).toMatchObject({ fields: { notes } });
  });

  it('folds an ASCII line into 75-octet pieces', () => {
    const folded = foldLine(`NOTE:${'x'.repeat(200)}`);
    const pieces = folded.split('\r\n');
    expect(pieces[0]).toHaveLength(75);
    expect(pieces.slice(1).every((piece) => piece.startsWith(' ') && piece.length <= 75)).toBe(true);
    expect(pieces.map((piece, i) => (i ? piece.slice(1) : piece)).join('')).toBe(`NOTE:${'x'.repeat(200)}`);
  });

  it('unfolds tab continuations and bare LF line ends', () => {
    const card = 'BEGIN:VCARD\nVERSION:3.0\nUID:t\nFN:Ann\n\tLee\nNOTE:a\n  b\nEND:VCARD\n';
    expect(parseVCard(card)).toMatchObject({ fields: { given_name: 'AnnLee', notes: 'a b' } });
  });

  it('escapes commas, semicolons, backslashes and line breaks in values', () => {
    const text = writeContactVCard('e', { given_name: 'A,B', surname: 'C;D', notes: 'x\\y\nz' });
    expect(text).toContain('N:C\\;D;A\\,B;;;\r\n');
    expect(text).toContain('NOTE:x\\\\y\\nz\r\n');
  });
});

describe('vCard input from other producers', () => {
  it('reads an iCloud-style 3.0 card (item groups, X-ABLabel, Apple birthday, IMPP service types)', () => {
    const card = [
      'BEGIN:VCARD',
      'VERSION:3.0',
      'PRODID:-//Apple Inc.//iPhone OS 17.0//EN',
      'N:Appleseed;Johnny;;;',
      'FN:Johnny Appleseed',
      'ORG:Apple;Engineering',
      'TITLE:Engineer',
      'item1.EMAIL;type=INTERNET;type=pref:john@icloud.com',
      'item1.X-ABLabel:_$!<Other>!$_',
      'EMAIL;type=INTERNET;type=WORK:john@apple.com',
      'TEL;type=CELL;type=VOICE;type=pref:+1 408 555 0000',
      'TEL;type=IPHONE;type=CELL:+1 408 555 0001',
      'TEL;type=WORK;type=FAX:+1 408 555 0002',
      'item2.ADR;type=HOME;type=pref:;;1 Infinite Loop;Cupertino;CA;95014;United States',
      'item2.X-ABADR:us',
      'item3.X-ABRELATEDNAMES;type=pref:Tim Cook',
      'item3.X-ABLabel:_$!<Manager>!$_',
      'BDAY;X-APPLE-OMIT-YEAR=1604;VALUE=date:1604-07-04',
      'IMPP;X-SERVICE-TYPE=Skype;type=HOME:skype:johnny',
      'IMPP;X-SERVICE-TYPE=Jabber:xmpp:johnny@jabber.org',
      'item4.URL;type=pref:http\\://johnny.example',
      'item4.X-ABLabel:_$!<HomePage>!$_',
      'X-UNKNOWN-THING:ignored',
      'UID:ABCD-1234',
      'END:VCARD',
      '',
    ].join('\r\n');
    expect(parseVCard(card)).toEqual({
      kind: 'individual',
      uid: 'ABCD-1234',
      categories: [],
      fields: {
        given_name: 'Johnny',
        surname: 'Appleseed',
        company_name: 'Apple',
        job_title: 'Engineer',
        manager_name: 'Tim Cook',
        birthday: '--07-04',
        emails: [
          { email: 'john@icloud.com', type: 'other' },
          { email: 'john@apple.com', type: 'work' },
        ],
        phone_numbers: [
          { number: '+1 408 555 0000', type: 'mobile' },
          { number: '+1 408 555 0001', type: 'mobile' },
          { number: '+1 408 555 0002', type: 'work' },
        ],
        physical_addresses: [
          {
            type: 'home',
            street_address: '1 Infinite Loop',
            city: 'Cupertino',
            state: 'CA',
            postal_code: '95014',
            country: 'United States',
          },
        ],
        im_addresses: [
          { im_address: 'johnny', type: 'skype' },
          { im_address: 'johnny@jabber.org', type: 'jabber' },
        ],
        web_pages: [{ url: 'http://johnny.example' }],
      },
    });
  });

  it('reads a vCard 4.0 card (tel: URIs, lower-case types, X-JABBER, CATEGORIES, a VALUE=uri photo)', () => {
    const card = [
      'BEGIN:VCARD',
      'VERSION:4.0',
      'UID:urn:uuid:4fbe8971-0bc3-424c-9c26-36c3e1eff6b1',
      'FN:Dr. Jane Q. Public',
      'N:Public;Jane;Quinn;Dr.;Esq.',
      'NICKNAME:JJ,Janie',
      'BDAY:19700102',
      'TEL;VALUE=uri;TYPE="voice,home":tel:+1-555-555-5555',
      'TEL;VALUE=uri;TYPE=cell:tel:+1-555-555-0000',
      'EMAIL;TYPE=work;PREF=1:jane@example.com',
      'X-JABBER:jane@xmpp.example',
      'PHOTO:http://www.example.com/pub/photos/jqpublic.gif',
      'CATEGORIES:INTERNET,IETF,INDUSTRY',
      'NOTE:Multi\\nline\\, note',
      'RELATED;TYPE=friend:urn:uuid:03a0e51f-d1aa-4385-8a53-e29025acd8af',
      'END:VCARD',
    ].join('\r\n');
    expect(parseVCard(card)).toEqual({
      kind: 'individual',
      uid: '4fbe8971-0bc3-424c-9c26-36c3e1eff6b1',
      categories: ['INTERNET', 'IETF', 'INDUSTRY'],
      fields: {
        given_name: 'Jane',
        middle_name: 'Quinn',
        surname: 'Public',
        suffix: 'Esq.',
        nickname: 'JJ, Janie',
        birthday: '1970-01-02',
        notes: 'Multi\nline, note',
        picture_url: 'http://www.example.com/pub/photos/jqpublic.gif',
        emails: [{ email: 'jane@example.com', type: 'work' }],
        phone_numbers: [
          { number: '+1-555-555-5555', type: 'home' },
          { number: '+1-555-555-0000', type: 'mobile' },
        ],
        im_addresses: [{ im_address: 'jane@xmpp.example', type: 'jabber' }],
      },
    });
  });

  it('reads 2.1-style bare type parameters and a card that has only FN', () => {
    const card =
      'BEGIN:VCARD\r\nVERSION:3.0\r\nUID:x\r\nFN:Solo Name\r\nTEL;WORK;VOICE:123\r\nEMAIL;HOME:s@example.org\r\nX-YAHOO:solo.y\r\nIMPP:ymsgr:solo.y2\r\nEND:VCARD\r\n';
    expect(parseVCard(card)).toMatchObject({
      fields: {
        given_name: 'Solo Name',
        phone_numbers: [{ number: '123', type: 'work' }],
        emails: [{ email: 's@example.org', type: 'home' }],
        im_addresses: [
          { im_address: 'solo.y', type: 'yahoo' },
          { im_address: 'solo.y2', type: 'yahoo' },
        ],
      },
    });
  });

  it('reads Apple groups and vCard 4 groups', () => {
    const apple =
      'BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:-//Apple Inc.//AddressBook//EN\r\nN:Friends\r\nFN:Friends\r\nX-ADDRESSBOOKSERVER-KIND:group\r\nX-ADDRESSBOOKSERVER-MEMBER:urn:uuid:A1\r\nX-ADDRESSBOOKSERVER-MEMBER:urn:uuid:B2\r\nUID:G1\r\nEND:VCARD\r\n';
    expect(parseVCard(apple)).toEqual({ kind: 'group', uid: 'G1', name: 'Friends', members: ['A1', 'B2'] });
    const four =
      'BEGIN:VCARD\r\nVERSION:4.0\r\nKIND:group\r\nFN:The Doe family\r\nMEMBER:urn:uuid:03a0e51f-d1aa-4385-8a53-e29025acd8af\r\nMEMBER:urn:uuid:b8767877-b4a1-4c70-9acc-505d3819e519\r\nUID:urn:uuid:g4\r\nEND:VCARD\r\n';
    expect(parseVCard(four)).toEqual({
      kind: 'group',
      uid: 'g4',
      name: 'The Doe family',
      members: ['03a0e51f-d1aa-4385-8a53-e29025acd8af', 'b8767877-b4a1-4c70-9acc-505d3819e519'],
    });
  });

  it('takes the fallback UID for a card without one', () => {
    const card = 'BEGIN:VCARD\r\nVERSION:3.0\r\nFN:No Uid\r\nEND:VCARD\r\n';
    expect(parseVCard(card, { fallbackUid: 'from-href' })).toMatchObject({
      uid: 'from-href',
      fields: { given_name: 'No Uid' },
    });
  });
});

describe('malformed vCards', () => {
  const cases: [string, string, RegExp][] = [
    ['empty input', '', /empty/],
    ['no BEGIN', 'VERSION:3.0\r\nUID:x\r\nEND:VCARD\r\n', /BEGIN:VCARD/],
    ['no END', 'BEGIN:VCARD\r\nVERSION:3.0\r\nUID:x\r\nFN:A\r\n', /END:VCARD/],
    ['no UID', 'BEGIN:VCARD\r\nVERSION:3.0\r\nFN:A\r\nEND:VCARD\r\n', /no UID/],
    ['garbage lines', 'BEGIN:VCARD\r\nthis is not a property\r\nUID:x\r\nEND:VCARD\r\n', /unreadable line/],
    ['binary garbage', '\u0000\u0001\u0002garbage', /BEGIN:VCARD/],
    ['an iCalendar object', 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n', /BEGIN:VCARD/],
  ];
  for (const [name, input, message] of cases) {
    it(`throws MalformedVCard for ${name}`, () => {
      expect(() => parseVCard(input)).toThrow(MalformedVCard);
      expect(() => parseVCard(input)).toThrow(message);
    });
  }

  it('refuses to write a birthday that is no date', () => {
    expect(() => writeContactVCard('x', { birthday: 'April 1st' })).toThrow(MalformedVCard);
  });
});
