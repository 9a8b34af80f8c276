import { readFileSync } from 'node:fs';
import ICAL from 'ical.js';
import { DateTime } from 'luxon';
import { afterEach, describe, expect, it } from 'vitest';
import { buildCalendar, IcsError, ianaZoneOf, parseCalendar, PRODID, type IcsEvent } from '#shared/calendar/ical';
import { WINDOWS_ZONES, windowsZoneToIana } from '#shared/calendar/windows-zones';
import { clock } from '#shared/time';

/**
 * iCalendar/iTIP building and parsing (shared/calendar/ical.ts). Every expected instant is written
 * as the UTC wall time worked out by hand from the zone's offset on that date (e.g. 10:00 in New York
 * on 15 Oct 2026 is EDT, UTC−4, so 14:00Z); `utc()` only turns that UTC wall time into Unix seconds,
 * which does not depend on the process time zone. This file also runs under TZ=Pacific/Auckland.
 */
const utc = (y: number, m: number, d: number, h = 0, min = 0, s = 0) => Date.UTC(y, m - 1, d, h, min, s) / 1000;
const fixture = (name: string) => readFileSync(`test/fixtures/ics/${name}`, 'utf8');
const unfold = (text: string) => text.replace(/\r\n[ \t]/g, '');
const lines = (text: string) => unfold(text).split('\r\n');
const calendar = (...body: string[]) =>
  ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Test//Test//EN', ...body, 'END:VCALENDAR', ''].join('\r\n');
const vevent = (...props: string[]) => [
  'BEGIN:VEVENT',
  'UID:t-1@example.com',
  'DTSTAMP:20261001T000000Z',
  ...props,
  'END:VEVENT',
];
const only = (text: string) => {
  const { events } = parseCalendar(text);
  expect(events).toHaveLength(1);
  return events[0]!;
};

let restoreClock: (() => void) | undefined;
afterEach(() => {
  restoreClock?.();
  restoreClock = undefined;
});

describe('parseCalendar: invitations as clients send them', () => {
  it('reads a Google Calendar invitation (google-request.ics)', () => {
    const parsed = parseCalendar(fixture('google-request.ics'));
    expect(parsed.method).toBe('REQUEST');
    expect(parsed.events).toHaveLength(1);
    const event = parsed.events[0]!;
    expect(event).toMatchObject({
      uid: '4q7b2kq8m1c3v9o6t0s5e8r2lh@google.com',
      sequence: 0,
      title: 'Q4 roadmap review',
      status: 'confirmed',
      busy: true,
      organizer: { email: 'priya.raman@gmail.com', name: 'Priya Raman' },
      conferencing_url: 'https://meet.google.com/xkp-rdwq-fve',
      created_at: utc(2026, 9, 28, 14, 35, 9),
      updated_at: utc(2026, 9, 28, 14, 35, 11),
      reminders: [{ minutes: 30, method: 'display' }],
    });
    // 10:00–11:00 EDT (UTC−4) on 15 Oct 2026 = 14:00Z–15:00Z.
    expect(event.when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 10, 15, 14),
      end_time: utc(2026, 10, 15, 15),
      start_timezone: 'America/New_York',
      end_timezone: 'America/New_York',
    });
    expect(event.when).toMatchObject({ start_time: 1792072800, end_time: 1792076400 });
    expect(event.participants).toEqual([
      { email: 'tomas.mueller@example.com', name: 'Tomás Müller', status: 'noreply' },
      { email: 'dana@example.org', name: 'dana@example.org', status: 'maybe' },
      { email: 'priya.raman@gmail.com', name: 'Priya Raman', status: 'yes' },
    ]);
    // The folded DESCRIPTION is one text again, unescaped; 'LOCATION:' (empty) is no location.
    expect(event.description).toMatch(
      /^Agenda:\n1\. Q3 numbers, with the revised forecast\n2\. Hiring plan; headcount for Q1\n/,
    );
    expect(event.description).toContain('Join with Google Meet: https://meet.google.com/xkp-rdwq-fve\n');
    expect(event.description).toMatch(/Please do not edit this section\.\n-::~:~::~(:~)+::~:~::-$/);
    expect(event).not.toHaveProperty('location');
    expect(event).not.toHaveProperty('recurrence');
    expect(event).not.toHaveProperty('recurrence_id');
    expect(event).not.toHaveProperty('resources');
    expect(event).not.toHaveProperty('visibility');
  });

  it('reads a weekly Google series with EXDATE and a moved occurrence (google-recurring.ics)', () => {
    const { method, events } = parseCalendar(fixture('google-recurring.ics'));
    expect(method).toBe('REQUEST');
    expect(events.map((e) => e.uid)).toEqual([
      '7hv0f1s2n3k4d5m6p8r9t0uc2g@google.com',
      '7hv0f1s2n3k4d5m6p8r9t0uc2g@google.com',
    ]);
    const [master, moved] = events as [IcsEvent, IcsEvent];
    // 09:30–09:45 PDT (UTC−7) on 5 Oct 2026 = 16:30Z–16:45Z.
    expect(master.when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 10, 5, 16, 30),
      end_time: utc(2026, 10, 5, 16, 45),
      start_timezone: 'America/Los_Angeles',
      end_timezone: 'America/Los_Angeles',
    });
    expect(master.recurrence).toEqual([
      'RRULE:FREQ=WEEKLY;WKST=SU;UNTIL=20261215T075959Z;BYDAY=MO',
      'EXDATE;TZID=America/Los_Angeles:20261109T093000',
    ]);
    expect(master).toMatchObject({
      sequence: 0,
      title: 'Team standup',
      conferencing_url: 'https://meet.google.com/bzt-qmnh-wka',
      reminders: [{ minutes: 10, method: 'display' }],
    });
    expect(master).not.toHaveProperty('recurrence_id');
    // After the end of DST: the 09:30 occurrence of 16 Nov is 09:30 PST (UTC−8) = 17:30Z; it moved to 11:00 PST = 19:00Z.
    expect(moved.recurrence_id).toEqual({ time: utc(2026, 11, 16, 17, 30), timezone: 'America/Los_Angeles' });
    expect(moved.when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 11, 16, 19),
      end_time: utc(2026, 11, 16, 19, 15),
      start_timezone: 'America/Los_Angeles',
      end_timezone: 'America/Los_Angeles',
    });
    expect(moved).toMatchObject({
      sequence: 1,
      title: 'Team standup (moved)',
      description: 'Moved for the all-hands.',
      updated_at: utc(2026, 10, 12, 16, 0, 19),
    });
    expect(moved).not.toHaveProperty('recurrence');
    expect(moved.participants.map((p) => [p.email, p.status])).toEqual([
      ['ana.souza@example.com', 'noreply'],
      ['marcus.lee@gmail.com', 'yes'],
    ]);
  });

  it('reads an Outlook/Exchange invitation with a Windows TZID and a room (outlook-request.ics)', () => {
    const { method, events } = parseCalendar(fixture('outlook-request.ics'));
    expect(method).toBe('REQUEST');
    const event = events[0]!;
    expect(event.uid).toBe(
      '040000008200E00074C5B7101A82E00800000000B0D9A6F1C45DDB01000000000000000010000000C4F1A8E2D7B3094F8E6A1B2C3D4E5F60',
    );
    // W. Europe Standard Time = Europe/Berlin; 3 Nov 2026 is after the end of DST: 14:00–15:30 CET (UTC+1) = 13:00Z–14:30Z.
    expect(event.when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 11, 3, 13),
      end_time: utc(2026, 11, 3, 14, 30),
      start_timezone: 'Europe/Berlin',
      end_timezone: 'Europe/Berlin',
    });
    expect(event).toMatchObject({
      sequence: 0,
      title: 'Budget planning FY27',
      location: 'Amsterdam - Room 4.12 (8)',
      status: 'confirmed',
      busy: true,
      visibility: 'public',
      organizer: { email: 'jan.devries@contoso.com', name: 'Jan de Vries' },
      updated_at: utc(2026, 10, 20, 8, 15, 12),
      reminders: [{ minutes: 15, method: 'display' }],
    });
    expect(event.participants).toEqual([
      { email: 'alex.kim@example.com', name: 'Alex Kim', status: 'noreply' },
      { email: 'sofia.rossi@contoso.com', name: 'Sofia Rossi', status: 'noreply' },
    ]);
    expect(event.resources).toEqual([{ email: 'room412.ams@contoso.com', name: 'Amsterdam - Room 4.12 (8)' }]);
    // No conference property: the Teams link is taken from the description.
    expect(event.conferencing_url).toBe(
      'https://teams.microsoft.com/l/meetup-join/19%3ameeting_ZDk2YzE0NTgtMmY3Ny00ZTQ1LWI3YjEtNTg2ZDc4ZjQ2Y2Iw%40thread.v2/0?context=%7b%22Tid%22%3a%2272f988bf-86f1-41af-91ab-2d7cd011db47%22%2c%22Oid%22%3a%22e1f0c0b2-1d7e-4c9e-9a3b-5f4e3d2c1b0a%22%7d',
    );
    expect(event.description).toMatch(/^Hi all,\n\nlet's go through the FY27 budget/);
  });

  it('reads an Outlook cancellation (outlook-cancel.ics)', () => {
    const { method, events } = parseCalendar(fixture('outlook-cancel.ics'));
    expect(method).toBe('CANCEL');
    const event = events[0]!;
    expect(event).toMatchObject({
      uid: '040000008200E00074C5B7101A82E00800000000B0D9A6F1C45DDB01000000000000000010000000C4F1A8E2D7B3094F8E6A1B2C3D4E5F60',
      sequence: 1,
      status: 'cancelled',
      busy: false,
      title: 'Canceled: Budget planning FY27',
      when: { object: 'timespan', start_time: utc(2026, 11, 3, 13), end_time: utc(2026, 11, 3, 14, 30) },
    });
    expect(event.participants.map((p) => p.email)).toEqual(['alex.kim@example.com', 'sofia.rossi@contoso.com']);
    expect(event.resources).toEqual([{ email: 'room412.ams@contoso.com', name: 'Amsterdam - Room 4.12 (8)' }]);
    expect(event).not.toHaveProperty('reminders');
  });

  it('reads an Apple Calendar all-day invitation (apple-request.ics)', () => {
    const { method, events } = parseCalendar(fixture('apple-request.ics'));
    expect(method).toBe('REQUEST');
    const event = events[0]!;
    // DTEND;VALUE=DATE is exclusive, as our datespan's end_date is: 19 and 20 November.
    expect(event.when).toEqual({ object: 'datespan', start_date: '2026-11-19', end_date: '2026-11-21' });
    expect(event).toMatchObject({
      uid: '5B0E8C1D-7F3A-4C62-9E1B-A84D2F6C0E37',
      sequence: 0,
      title: 'Team offsite 🌲',
      location: 'Hotel Müggelsee\nMüggelheimer Damm 145, 12559 Berlin, Germany',
      url: 'https://wiki.example.com/offsite-2026',
      status: 'confirmed',
      busy: false,
      organizer: { email: 'lena.fischer@icloud.com', name: 'Lena Fischer' },
      created_at: utc(2026, 11, 2, 18, 45, 12),
      updated_at: utc(2026, 11, 2, 18, 46, 36),
    });
    // An attendee addressed by urn:uuid: is known by its EMAIL parameter.
    expect(event.participants).toEqual([
      { email: 'piotr.kowalski@example.com', name: 'Kowalski, Piotr', status: 'noreply' },
      { email: 'mia.schneider@icloud.com', name: 'Mia Schneider', status: 'no' },
      { email: 'lena.fischer@icloud.com', name: 'Lena Fischer', status: 'yes' },
    ]);
    // -PT15H before an all-day start is the day before at 09:00; ACTION:NONE (Apple's "no alert") is not a reminder.
    expect(event.reminders).toEqual([{ minutes: 900, method: 'display' }]);
    expect(event).not.toHaveProperty('conferencing_url');
  });

  it('reads a REPLY: the attendee, its answer and its COMMENT (reply-accepted.ics)', () => {
    const { method, events } = parseCalendar(fixture('reply-accepted.ics'));
    expect(method).toBe('REPLY');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      uid: 'evt_01JD8Q3ZK5W7R2N4M6P8T0V9XA@switchboard.example',
      sequence: 2,
      organizer: { email: 'agent-a@switchboard.example', name: 'Agent A' },
      participants: [
        {
          email: 'bee.jones@example.com',
          name: 'Bee Jones',
          status: 'yes',
          comment: "See you there, I'll bring the slides.",
        },
      ],
      // 14:00–15:00 CET (UTC+1) on 10 Dec 2026.
      when: {
        object: 'timespan',
        start_time: utc(2026, 12, 10, 13),
        end_time: utc(2026, 12, 10, 14),
        start_timezone: 'Europe/Berlin',
      },
      updated_at: utc(2026, 12, 1, 9, 15, 12),
    });
  });

  it('takes a Google reply comment from X-RESPONSE-COMMENT', () => {
    const text = calendar(
      'METHOD:REPLY',
      ...vevent(
        'DTSTART:20261210T130000Z',
        'ORGANIZER:mailto:a@example.com',
        'ATTENDEE;PARTSTAT=DECLINED;X-RESPONSE-COMMENT="Sorry, travelling":mailto:b@example.com',
      ),
    );
    expect(only(text).participants).toEqual([{ email: 'b@example.com', status: 'no', comment: 'Sorry, travelling' }]);
  });

  it.each([
    ['malformed.ics (truncated)', fixture('malformed.ics')],
    [
      'an unterminated VEVENT with a garbage DTSTART',
      'BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:garbage\r\nSUMMARY:half',
    ],
    ['a garbage DTSTART in a complete VEVENT', calendar(...vevent('DTSTART:garbage'))],
    ['a DTSTART cut short', calendar(...vevent('DTSTART;TZID=Europe/Berlin:2026101'))],
    ['an impossible date', calendar(...vevent('DTSTART:20260231T090000Z'))],
    ['a VEVENT without DTSTART', calendar(...vevent('SUMMARY:no start'))],
    ['a VEVENT without UID', calendar('BEGIN:VEVENT', 'DTSTART:20261001T090000Z', 'END:VEVENT')],
    ['a VCALENDAR without VEVENT', calendar('BEGIN:VTODO', 'UID:x', 'END:VTODO')],
    ['an empty text', ''],
    ['plain text', 'Hello, this is not a calendar'],
    ['a vCard', 'BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Someone\r\nEND:VCARD\r\n'],
    ['a bad DURATION', calendar(...vevent('DTSTART:20261001T090000Z', 'DURATION:soon'))],
    ['an RRULE without FREQ', calendar(...vevent('DTSTART:20261001T090000Z', 'RRULE:garbage'))],
    ['an RRULE with an unknown FREQ', calendar(...vevent('DTSTART:20261001T090000Z', 'RRULE:FREQ=SOMETIMES'))],
    ['an EXDATE of garbage', calendar(...vevent('DTSTART:20261001T090000Z', 'EXDATE:garbage'))],
  ])('throws IcsError for %s', (_name, text) => {
    expect(() => parseCalendar(text)).toThrow(IcsError);
  });

  it('throws IcsError, and nothing else, for input that is not text', () => {
    for (const input of [undefined, null, 42, {}, Buffer.from('BEGIN:VCALENDAR')]) {
      expect(() => parseCalendar(input as unknown as string)).toThrow(IcsError);
    }
    const error = (() => {
      try {
        parseCalendar('nope');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'IcsError' });
  });
});

describe('parseCalendar: times and zones', () => {
  it.each([
    // Windows ID, local time, IANA zone, the instant worked out from the zone's offset on that date.
    ['Pacific Standard Time', '20260115T090000', 'America/Los_Angeles', utc(2026, 1, 15, 17)], // PST UTC−8
    ['W. Europe Standard Time', '20260701T090000', 'Europe/Berlin', utc(2026, 7, 1, 7)], // CEST UTC+2
    ['Eastern Standard Time', '20260115T090000', 'America/New_York', utc(2026, 1, 15, 14)], // EST UTC−5
    ['GMT Standard Time', '20260701T090000', 'Europe/London', utc(2026, 7, 1, 8)], // BST UTC+1
    ['India Standard Time', '20260115T090000', 'Asia/Kolkata', utc(2026, 1, 15, 3, 30)], // IST UTC+5:30
    ['AUS Eastern Standard Time', '20260115T090000', 'Australia/Sydney', utc(2026, 1, 14, 22)], // AEDT UTC+11
    ['Romance Standard Time', '20260115T090000', 'Europe/Paris', utc(2026, 1, 15, 8)], // CET UTC+1
    ['Central Europe Standard Time', '20260115T090000', 'Europe/Budapest', utc(2026, 1, 15, 8)], // CET UTC+1
    ['Tokyo Standard Time', '20260115T090000', 'Asia/Tokyo', utc(2026, 1, 15, 0)], // JST UTC+9
    ['Central Standard Time', '20260701T090000', 'America/Chicago', utc(2026, 7, 1, 14)], // CDT UTC−5
    ['China Standard Time', '20260115T090000', 'Asia/Shanghai', utc(2026, 1, 15, 1)], // CST UTC+8
    ['New Zealand Standard Time', '20260115T090000', 'Pacific/Auckland', utc(2026, 1, 14, 20)], // NZDT UTC+13
    ['E. South America Standard Time', '20260115T090000', 'America/Sao_Paulo', utc(2026, 1, 15, 12)], // BRT UTC−3
    ['UTC', '20260115T090000', 'UTC', utc(2026, 1, 15, 9)],
  ])('maps the Outlook TZID %s to IANA and reads the instant', (tzid, local, zone, instant) => {
    const event = only(calendar(...vevent(`DTSTART;TZID=${tzid}:${local}`, `DTEND;TZID=${tzid}:${local}`)));
    expect(event.when).toEqual({
      object: 'timespan',
      start_time: instant,
      end_time: instant,
      start_timezone: zone,
      end_timezone: zone,
    });
  });

  it('maps every CLDR Windows zone to an IANA zone we can also write a VTIMEZONE for', () => {
    const entries = Object.entries(WINDOWS_ZONES);
    expect(entries.length).toBeGreaterThanOrEqual(130);
    for (const [windows, iana] of entries) {
      expect(DateTime.now().setZone(iana).isValid, `${windows} → ${iana}`).toBe(true);
      expect(windowsZoneToIana(windows.toUpperCase())).toBe(iana);
    }
    const event: IcsEvent = {
      uid: 'z@x',
      sequence: 0,
      when: { object: 'timespan', start_time: utc(2026, 7, 1, 12), end_time: utc(2026, 7, 1, 13) },
      status: 'confirmed',
      busy: true,
      participants: [],
    };
    for (const iana of new Set(Object.values(WINDOWS_ZONES))) {
      if (iana === 'Etc/UTC') continue;
      const text = buildCalendar('PUBLISH', [
        { ...event, when: { ...event.when, start_timezone: iana } as IcsEvent['when'] },
      ]);
      expect(text, iana).toContain(`TZID:${iana}\r\n`);
      expect(only(text).when, iana).toMatchObject({ start_time: utc(2026, 7, 1, 12), start_timezone: iana });
    }
  });

  it.each([
    ['Europe/Berlin', 'Europe/Berlin'],
    ['/Europe/Berlin', 'Europe/Berlin'],
    ['/citadel.org/20070103_1/Europe/Berlin', 'Europe/Berlin'],
    ['/mozilla.org/20050126_1/America/New_York', 'America/New_York'],
    ['/freeassociation.sourceforge.net/Tzfile/America/Argentina/Buenos_Aires', 'America/Argentina/Buenos_Aires'],
    ['"Asia/Tokyo"', 'Asia/Tokyo'],
    ['w. europe standard time', 'Europe/Berlin'],
    ['Etc/UTC', 'UTC'],
    ['GMT', 'UTC'],
    ['Z', 'UTC'],
    ['Customized Time Zone', undefined],
    ['+01:00', undefined],
    ['', undefined],
  ])('names the zone of TZID %j: %s', (tzid, zone) => {
    expect(ianaZoneOf(tzid)).toBe(zone);
  });

  it('reads a prefixed TZID (/citadel.org/…/Europe/Berlin) as the IANA zone', () => {
    const event = only(
      calendar(
        ...vevent(
          'DTSTART;TZID=/citadel.org/20070103_1/Europe/Berlin:20261012T090000',
          'DTEND;TZID=/Europe/Berlin:20261012T100000',
        ),
      ),
    );
    // 09:00 CEST (UTC+2) = 07:00Z.
    expect(event.when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 10, 12, 7),
      end_time: utc(2026, 10, 12, 8),
      start_timezone: 'Europe/Berlin',
      end_timezone: 'Europe/Berlin',
    });
  });

  const customZone = [
    'BEGIN:VTIMEZONE',
    'TZID:Customized Time Zone',
    'BEGIN:STANDARD',
    'DTSTART:16010101T030000',
    'TZOFFSETFROM:+0300',
    'TZOFFSETTO:+0200',
    'RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10',
    'END:STANDARD',
    'BEGIN:DAYLIGHT',
    'DTSTART:16010101T020000',
    'TZOFFSETFROM:+0200',
    'TZOFFSETTO:+0300',
    'RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3',
    'END:DAYLIGHT',
    'END:VTIMEZONE',
  ];

  it('computes an unknown TZID from the VTIMEZONE in the file and reports UTC', () => {
    const summer = only(
      calendar(
        ...customZone,
        ...vevent(
          'DTSTART;TZID=Customized Time Zone:20260701T090000',
          'DTEND;TZID=Customized Time Zone:20260701T100000',
        ),
      ),
    );
    // +0300 in summer: 09:00 = 06:00Z.
    expect(summer.when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 7, 1, 6),
      end_time: utc(2026, 7, 1, 7),
      start_timezone: 'UTC',
      end_timezone: 'UTC',
    });
    const winter = only(
      calendar(
        ...customZone,
        ...vevent(
          'DTSTART;TZID="Customized Time Zone":20260115T090000',
          'EXDATE;TZID=Customized Time Zone:20260122T090000,20260705T090000',
          'RRULE:FREQ=WEEKLY',
        ),
      ),
    );
    // +0200 in winter: 09:00 = 07:00Z; the EXDATEs become UTC instants (07:00Z in January, 06:00Z in July).
    expect(winter.when).toMatchObject({ start_time: utc(2026, 1, 15, 7), start_timezone: 'UTC' });
    expect(winter.recurrence).toEqual(['EXDATE:20260122T070000Z,20260705T060000Z', 'RRULE:FREQ=WEEKLY']);
  });

  it('reads floating times, and TZIDs nothing describes, as UTC', () => {
    expect(only(calendar(...vevent('DTSTART:20261012T090000', 'DTEND:20261012T100000'))).when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 10, 12, 9),
      end_time: utc(2026, 10, 12, 10),
      start_timezone: 'UTC',
      end_timezone: 'UTC',
    });
    expect(only(calendar(...vevent('DTSTART;TZID=Mars/Olympus_Mons:20261012T090000'))).when).toMatchObject({
      start_time: utc(2026, 10, 12, 9),
      start_timezone: 'UTC',
    });
  });

  it('reads UTC times (Z) with zone UTC, DURATION in place of DTEND, and no end as zero length', () => {
    expect(only(calendar(...vevent('DTSTART:20261012T090000Z', 'DURATION:PT1H30M'))).when).toEqual({
      object: 'timespan',
      start_time: utc(2026, 10, 12, 9),
      end_time: utc(2026, 10, 12, 10, 30),
      start_timezone: 'UTC',
      end_timezone: 'UTC',
    });
    expect(only(calendar(...vevent('DTSTART:20261012T090000Z'))).when).toMatchObject({
      start_time: utc(2026, 10, 12, 9),
      end_time: utc(2026, 10, 12, 9),
    });
    // A day of DURATION is a calendar day: across the end of DST in Berlin it is 25 hours.
    expect(only(calendar(...vevent('DTSTART;TZID=Europe/Berlin:20261024T090000', 'DURATION:P1D'))).when).toMatchObject({
      start_time: utc(2026, 10, 24, 7),
      end_time: utc(2026, 10, 25, 8),
    });
  });

  it('reads all-day events: one day as a date, more as a datespan, a DATE without VALUE=DATE too', () => {
    expect(only(calendar(...vevent('DTSTART;VALUE=DATE:20261012', 'DTEND;VALUE=DATE:20261013'))).when).toEqual({
      object: 'date',
      date: '2026-10-12',
    });
    expect(only(calendar(...vevent('DTSTART;VALUE=DATE:20261012'))).when).toEqual({
      object: 'date',
      date: '2026-10-12',
    });
    expect(only(calendar(...vevent('DTSTART;VALUE=DATE:20261230', 'DURATION:P3D'))).when).toEqual({
      object: 'datespan',
      start_date: '2026-12-30',
      end_date: '2027-01-02',
    });
    expect(only(calendar(...vevent('DTSTART:20261012', 'DTEND:20261014'))).when).toEqual({
      object: 'datespan',
      start_date: '2026-10-12',
      end_date: '2026-10-14',
    });
  });

  it('writes recurrence lines in our form: RRULE as sent, EXDATE/RDATE with IANA TZID, Z or VALUE=DATE', () => {
    const event = only(
      calendar(
        ...vevent(
          'DTSTART;TZID=W. Europe Standard Time:20261005T090000',
          'RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;COUNT=10',
          'EXDATE;TZID=W. Europe Standard Time:20261019T090000,20261021T090000',
          'EXDATE:20261102T080000Z',
          'RDATE;TZID=/Europe/Berlin:20261024T100000',
          'RDATE;VALUE=PERIOD:20261025T100000Z/20261025T110000Z',
          'EXDATE;VALUE=DATE:20261104',
          'EXDATE:20261106T090000',
        ),
      ),
    );
    expect(event.recurrence).toEqual([
      'RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;COUNT=10',
      'EXDATE;TZID=Europe/Berlin:20261019T090000,20261021T090000',
      'EXDATE:20261102T080000Z',
      'RDATE;TZID=Europe/Berlin:20261024T100000',
      'RDATE:20261025T100000Z',
      'EXDATE;VALUE=DATE:20261104',
      'EXDATE:20261106T090000Z',
    ]);
  });

  it('reads statuses, transparency, class and attendee kinds', () => {
    const base = ['DTSTART:20261012T090000Z'];
    expect(
      only(calendar(...vevent(...base, 'STATUS:TENTATIVE', 'TRANSP:TRANSPARENT', 'CLASS:CONFIDENTIAL'))),
    ).toMatchObject({ status: 'maybe', busy: false, visibility: 'private' });
    expect(only(calendar(...vevent(...base, 'CLASS:PRIVATE')))).toMatchObject({
      status: 'confirmed',
      busy: true,
      visibility: 'private',
    });
    expect(only(calendar(...vevent(...base, 'X-MICROSOFT-CDO-BUSYSTATUS:FREE')))).toMatchObject({ busy: false });
    expect(only(calendar('METHOD:CANCEL', ...vevent(...base)))).toMatchObject({ status: 'cancelled' });
    const people = only(
      calendar(
        ...vevent(
          ...base,
          'ORGANIZER;CN="Doe, Jane";SENT-BY="mailto:assistant@example.com":MAILTO:Jane.Doe@Example.COM',
          'ATTENDEE;PARTSTAT=ACCEPTED:mailto:A@example.com',
          'ATTENDEE;PARTSTAT=DECLINED:Mailto:b@example.com',
          'ATTENDEE;PARTSTAT=TENTATIVE:mailto:c@example.com',
          'ATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:d@example.com',
          'ATTENDEE:mailto:e@example.com',
          'ATTENDEE;PARTSTAT=DELEGATED:mailto:f@example.com',
          'ATTENDEE;CUTYPE=RESOURCE;CN=Projector:mailto:projector@example.com',
          'ATTENDEE;CUTYPE=ROOM:mailto:room@example.com',
          'ATTENDEE;PARTSTAT=ACCEPTED:mailto:a@example.com',
          'ATTENDEE:urn:uuid:no-email-here',
        ),
      ),
    );
    expect(people.organizer).toEqual({ email: 'jane.doe@example.com', name: 'Doe, Jane' });
    expect(people.participants.map((p) => `${p.email}:${p.status}`)).toEqual([
      'a@example.com:yes',
      'b@example.com:no',
      'c@example.com:maybe',
      'd@example.com:noreply',
      'e@example.com:noreply',
      'f@example.com:noreply',
    ]);
    expect(people.resources).toEqual([
      { email: 'projector@example.com', name: 'Projector' },
      { email: 'room@example.com' },
    ]);
  });

  it('finds the conference link: X-GOOGLE-CONFERENCE, CONFERENCE, or a Meet/Zoom/Teams link in URL or LOCATION', () => {
    const base = ['DTSTART:20261012T090000Z'];
    expect(
      only(calendar(...vevent(...base, 'LOCATION:https://us02web.zoom.us/j/81234567890?pwd=abc'))).conferencing_url,
    ).toBe('https://us02web.zoom.us/j/81234567890?pwd=abc');
    expect(only(calendar(...vevent(...base, 'URL:https://meet.google.com/abc-defg-hij'))).conferencing_url).toBe(
      'https://meet.google.com/abc-defg-hij',
    );
    expect(
      only(calendar(...vevent(...base, 'CONFERENCE;VALUE=URI;FEATURE=VIDEO:https://video.example.com/room/1')))
        .conferencing_url,
    ).toBe('https://video.example.com/room/1');
    expect(only(calendar(...vevent(...base, 'LOCATION:Room 1', 'URL:https://example.com/agenda')))).not.toHaveProperty(
      'conferencing_url',
    );
  });

  it('reads reminders: relative to start or end, absolute, display or email', () => {
    const alarm = (...props: string[]) => ['BEGIN:VALARM', ...props, 'END:VALARM'];
    const event = only(
      calendar(
        ...vevent(
          'DTSTART:20261012T090000Z',
          'DTEND:20261012T100000Z',
          ...alarm('ACTION:DISPLAY', 'DESCRIPTION:x', 'TRIGGER:-PT10M'),
          ...alarm('ACTION:EMAIL', 'SUMMARY:x', 'DESCRIPTION:x', 'ATTENDEE:mailto:a@example.com', 'TRIGGER:-P1D'),
          ...alarm('ACTION:AUDIO', 'TRIGGER;VALUE=DATE-TIME:20261012T083000Z'),
          ...alarm('ACTION:DISPLAY', 'DESCRIPTION:x', 'TRIGGER;RELATED=END:-PT90M'),
          ...alarm('ACTION:DISPLAY', 'DESCRIPTION:after the start', 'TRIGGER:PT5M'),
        ),
      ),
    );
    expect(event.reminders).toEqual([
      { minutes: 10, method: 'display' },
      { minutes: 1440, method: 'email' },
      { minutes: 30, method: 'display' },
      { minutes: 30, method: 'display' },
    ]);
  });

  it('unfolds and unescapes text: commas, semicolons, backslashes, newlines, non-ASCII', () => {
    const event = only(
      calendar(
        ...vevent(
          'DTSTART:20261012T090000Z',
          'SUMMARY:a\\, b\\; c\\\\d',
          'DESCRIPTION:line 1\\nline 2\\Nline 3 — Grüße\\, 東京',
          ' continued after a fold',
        ),
      ),
    );
    expect(event.title).toBe('a, b; c\\d');
    expect(event.description).toBe('line 1\nline 2\nline 3 — Grüße, 東京continued after a fold');
  });

  it('reads the same whatever the process time zone', () => {
    const names = [
      'google-request.ics',
      'google-recurring.ics',
      'outlook-request.ics',
      'outlook-cancel.ics',
      'apple-request.ics',
      'reply-accepted.ics',
    ];
    // Two days over the end of DST in Berlin: 48 hours, whatever the process zone makes of the dates.
    const overDst = calendar(
      ...vevent(
        'DTSTART;VALUE=DATE:20261024',
        'DTEND;VALUE=DATE:20261026',
        'BEGIN:VALARM',
        'ACTION:DISPLAY',
        'DESCRIPTION:x',
        'TRIGGER;RELATED=END:-PT49H',
        'END:VALARM',
      ),
    );
    const saved = process.env.TZ;
    try {
      const results = ['UTC', 'Pacific/Auckland', 'America/Los_Angeles', 'Asia/Kolkata', 'Europe/Berlin'].map((tz) => {
        process.env.TZ = tz;
        expect(only(overDst).reminders).toEqual([{ minutes: 60, method: 'display' }]);
        return JSON.stringify(names.map((n) => parseCalendar(fixture(n))));
      });
      expect(new Set(results).size).toBe(1);
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});

describe('buildCalendar', () => {
  const organizer = { email: 'Organizer@Example.com', name: 'Olga Organizer' };
  // 09:00 CEST (UTC+2) on 12 Oct 2026 = 07:00Z.
  const nine = utc(2026, 10, 12, 7);
  const meeting: IcsEvent = {
    uid: 'evt_1@switchboard.example',
    sequence: 3,
    title: 'Design review',
    description: 'Agenda: 1, 2; 3\nSecond line with "quotes", a \\ backslash, Grüße and 日本語 🎉',
    location: 'Room 2, 3rd floor',
    when: {
      object: 'timespan',
      start_time: nine,
      end_time: nine + 3600,
      start_timezone: 'Europe/Berlin',
      end_timezone: 'Europe/Berlin',
    },
    status: 'confirmed',
    busy: true,
    visibility: 'private',
    organizer: { email: 'organizer@example.com', name: 'Olga Organizer' },
    participants: [
      { email: 'bee@example.com', name: 'Bee, Jones', status: 'noreply' },
      { email: 'cee@example.com', status: 'yes' },
      { email: 'organizer@example.com', name: 'Olga Organizer', status: 'yes' },
    ],
    resources: [{ email: 'room2@example.com', name: 'Room 2' }],
    conferencing_url: 'https://meet.google.com/abc-defg-hij',
    url: 'https://example.com/events/1',
    created_at: utc(2026, 9, 1, 12),
    updated_at: utc(2026, 9, 2, 12),
    comment: 'Bring the prototype',
    reminders: [
      { minutes: 15, method: 'display' },
      { minutes: 1440, method: 'email' },
    ],
  };

  it('writes a REQUEST with METHOD, PRODID, the VTIMEZONE of its zone and mailto addresses', () => {
    restoreClock = clock.set(() => Date.UTC(2026, 9, 1, 12, 0, 0));
    const text = buildCalendar('REQUEST', [{ ...meeting, organizer }]);
    const all = lines(text);
    expect(all.slice(0, 5)).toEqual([
      'BEGIN:VCALENDAR',
      `PRODID:${PRODID}`,
      'VERSION:2.0',
      'CALSCALE:GREGORIAN',
      'METHOD:REQUEST',
    ]);
    expect(PRODID).toBe('-//Switchboard//Calendar API//EN');
    expect(all).toContain('TZID:Europe/Berlin');
    expect(all.filter((l) => l === 'BEGIN:VTIMEZONE')).toHaveLength(1);
    expect(all).toContain('DTSTART;TZID=Europe/Berlin:20261012T090000');
    expect(all).toContain('DTEND;TZID=Europe/Berlin:20261012T100000');
    expect(all).toContain('DTSTAMP:20261001T120000Z');
    expect(all).toContain('SEQUENCE:3');
    expect(all).toContain('ORGANIZER;CN=Olga Organizer:mailto:organizer@example.com');
    expect(all).toContain(
      'ATTENDEE;CN="Bee, Jones";CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:bee@example.com',
    );
    expect(all).toContain(
      'ATTENDEE;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED;RSVP=TRUE:mailto:cee@example.com',
    );
    // The organizer attending is not asked for an answer.
    expect(all).toContain(
      'ATTENDEE;CN=Olga Organizer;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED:mailto:organizer@example.com',
    );
    expect(all).toContain(
      'ATTENDEE;CN=Room 2;CUTYPE=ROOM;ROLE=NON-PARTICIPANT;PARTSTAT=NEEDS-ACTION:mailto:room2@example.com',
    );
    expect(all).toContain('STATUS:CONFIRMED');
    expect(all).toContain('TRANSP:OPAQUE');
    expect(all).toContain('CLASS:PRIVATE');
    expect(all).toContain('CONFERENCE;FEATURE=VIDEO;VALUE=URI:https://meet.google.com/abc-defg-hij');
    expect(all).toContain('TRIGGER:-PT15M');
    expect(all.filter((l) => l === 'BEGIN:VALARM')).toHaveLength(2);
    expect(all.at(-2)).toBe('END:VCALENDAR');
  });

  it('writes valid lines: CRLF, folded to at most 75 octets, balanced components', () => {
    const text = buildCalendar('REQUEST', [
      { ...meeting, description: `${'Lorem ipsum dolor sit amet, ünïcødé 日本語 🎉; '.repeat(20)}end` },
    ]);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(text.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    for (const line of text.split('\r\n')) expect(Buffer.byteLength(line, 'utf8'), line).toBeLessThanOrEqual(75);
    const begins = lines(text)
      .filter((l) => l.startsWith('BEGIN:'))
      .map((l) => l.slice(6));
    const ends = lines(text)
      .filter((l) => l.startsWith('END:'))
      .map((l) => l.slice(4));
    expect(begins.sort()).toEqual(ends.sort());
    expect(only(text).description).toBe(`${'Lorem ipsum dolor sit amet, ünïcødé 日本語 🎉; '.repeat(20)}end`);
  });

  it('round-trips a REQUEST: every field comes back', () => {
    const back = only(buildCalendar('REQUEST', [meeting]));
    expect(back).toEqual(meeting);
  });

  it('writes VTIMEZONEs that agree with the times written (what other clients compute)', () => {
    const flight: IcsEvent = {
      ...meeting,
      // 09:00 CEST (UTC+2) in Berlin to 11:30 EDT (UTC−4) in New York: 07:00Z to 15:30Z.
      when: {
        object: 'timespan',
        start_time: nine,
        end_time: utc(2026, 10, 12, 15, 30),
        start_timezone: 'Europe/Berlin',
        end_timezone: 'America/New_York',
      },
    };
    const text = buildCalendar('PUBLISH', [flight]);
    const all = lines(text);
    expect(all).toContain('DTSTART;TZID=Europe/Berlin:20261012T090000');
    expect(all).toContain('DTEND;TZID=America/New_York:20261012T113000');
    const root = new ICAL.Component(ICAL.parse(text));
    const zones = new Map(
      root
        .getAllSubcomponents('vtimezone')
        .map((z) => [String(z.getFirstPropertyValue('tzid')), new ICAL.Timezone(z)] as const),
    );
    expect([...zones.keys()].sort()).toEqual(['America/New_York', 'Europe/Berlin']);
    const offset = (tzid: string, y: number, m: number, d: number, h: number, min: number) =>
      zones.get(tzid)!.utcOffset(ICAL.Time.fromData({ year: y, month: m, day: d, hour: h, minute: min, second: 0 }));
    expect(utc(2026, 10, 12, 9) - offset('Europe/Berlin', 2026, 10, 12, 9, 0)).toBe(nine);
    expect(utc(2026, 10, 12, 11, 30) - offset('America/New_York', 2026, 10, 12, 11, 30)).toBe(
      utc(2026, 10, 12, 15, 30),
    );
    expect(only(text).when).toEqual(flight.when);
  });

  it('writes a time without zone in UTC with Z, and reads it back with zone UTC', () => {
    const event: IcsEvent = {
      uid: 'u@x',
      sequence: 0,
      when: { object: 'timespan', start_time: utc(2026, 10, 12, 9), end_time: utc(2026, 10, 12, 9, 30) },
      status: 'confirmed',
      busy: true,
      participants: [],
    };
    const text = buildCalendar('PUBLISH', [event]);
    expect(lines(text)).toContain('DTSTART:20261012T090000Z');
    expect(text).not.toContain('BEGIN:VTIMEZONE');
    expect(only(text).when).toEqual({ ...event.when, start_timezone: 'UTC', end_timezone: 'UTC' });
    expect(
      lines(
        buildCalendar('PUBLISH', [{ ...event, when: { ...event.when, start_timezone: 'UTC' } as IcsEvent['when'] }]),
      ),
    ).toContain('DTEND:20261012T093000Z');
  });

  it('writes IANA names only: a Windows zone is written as its IANA zone, a link under its own name', () => {
    const base: IcsEvent = {
      uid: 'w@x',
      sequence: 0,
      when: { object: 'timespan', start_time: nine, end_time: nine },
      status: 'confirmed',
      busy: true,
      participants: [],
    };
    const windows = buildCalendar('PUBLISH', [
      { ...base, when: { ...base.when, start_timezone: 'W. Europe Standard Time' } as IcsEvent['when'] },
    ]);
    expect(lines(windows)).toContain('DTSTART;TZID=Europe/Berlin:20261012T090000');
    expect(lines(windows)).toContain('TZID:Europe/Berlin');
    // 12:30 IST (UTC+5:30) = 07:00Z; the VTIMEZONE is named as the event names its zone.
    const link = buildCalendar('PUBLISH', [
      { ...base, when: { ...base.when, start_timezone: 'Asia/Calcutta' } as IcsEvent['when'] },
    ]);
    expect(lines(link)).toContain('DTSTART;TZID=Asia/Calcutta:20261012T123000');
    expect(lines(link)).toContain('TZID:Asia/Calcutta');
    expect(only(link).when).toMatchObject({ start_time: nine, start_timezone: 'Asia/Calcutta' });
  });

  it.each<[string, IcsEvent['when'], string[]]>([
    ['a date', { object: 'date', date: '2026-12-24' }, ['DTSTART;VALUE=DATE:20261224', 'DTEND;VALUE=DATE:20261225']],
    [
      'a datespan',
      { object: 'datespan', start_date: '2026-12-30', end_date: '2027-01-02' },
      ['DTSTART;VALUE=DATE:20261230', 'DTEND;VALUE=DATE:20270102'],
    ],
  ])('round-trips %s as DTSTART;VALUE=DATE', (_name, when, expected) => {
    const event: IcsEvent = {
      uid: 'd@x',
      sequence: 0,
      title: 'Holiday',
      when,
      status: 'confirmed',
      busy: false,
      participants: [],
      updated_at: utc(2026, 9, 1),
      reminders: [{ minutes: 900, method: 'display' }],
    };
    const text = buildCalendar('PUBLISH', [event]);
    for (const line of expected) expect(lines(text)).toContain(line);
    expect(text).not.toContain('BEGIN:VTIMEZONE');
    expect(only(text)).toEqual(event);
  });

  it('round-trips recurrence lines: RRULE, EXDATE with TZID, RDATE in another zone, dates', () => {
    const recurrence = [
      'RRULE:FREQ=WEEKLY;UNTIL=20261231T225959Z;BYDAY=MO,WE',
      'EXDATE;TZID=Europe/Berlin:20261019T090000,20261021T090000',
      'RDATE;TZID=Asia/Kolkata:20261024T123000',
      'EXDATE:20261102T080000Z',
    ];
    const text = buildCalendar('REQUEST', [{ ...meeting, recurrence }]);
    for (const line of recurrence) expect(lines(text)).toContain(line);
    expect(
      lines(text)
        .filter((l) => l.startsWith('TZID:'))
        .sort(),
    ).toEqual(['TZID:Asia/Kolkata', 'TZID:Europe/Berlin']);
    expect(only(text).recurrence).toEqual(recurrence);

    const allDay = ['RRULE:FREQ=YEARLY;COUNT=5', 'EXDATE;VALUE=DATE:20271224', 'RDATE;VALUE=DATE:20261226,20271226'];
    const yearly: IcsEvent = {
      uid: 'y@x',
      sequence: 0,
      when: { object: 'date', date: '2026-12-24' },
      recurrence: allDay,
      status: 'confirmed',
      busy: false,
      participants: [],
      updated_at: utc(2026, 9, 1),
    };
    expect(only(buildCalendar('PUBLISH', [yearly]))).toEqual(yearly);
  });

  it('writes EXDATE/RDATE in a Windows zone under its IANA name', () => {
    const text = buildCalendar('PUBLISH', [
      { ...meeting, recurrence: ['RRULE:FREQ=DAILY;COUNT=3', 'EXDATE;TZID=W. Europe Standard Time:20261013T090000'] },
    ]);
    expect(lines(text)).toContain('EXDATE;TZID=Europe/Berlin:20261013T090000');
    // Floating times mixed with UTC ones are all UTC.
    const mixed = buildCalendar('PUBLISH', [
      { ...meeting, recurrence: ['RRULE:FREQ=DAILY;COUNT=3', 'EXDATE:20261013T070000,20261014T070000Z'] },
    ]);
    expect(lines(mixed)).toContain('EXDATE:20261013T070000Z,20261014T070000Z');
  });

  it('round-trips a series and its exception: one UID, RECURRENCE-ID of the occurrence', () => {
    const master: IcsEvent = { ...meeting, recurrence: ['RRULE:FREQ=WEEKLY;COUNT=4'] };
    // The 19 Oct occurrence (09:00 CEST = 07:00Z) moved to 11:00 CEST = 09:00Z.
    const exception: IcsEvent = {
      ...meeting,
      title: 'Design review (moved)',
      when: {
        object: 'timespan',
        start_time: utc(2026, 10, 19, 9),
        end_time: utc(2026, 10, 19, 10),
        start_timezone: 'Europe/Berlin',
        end_timezone: 'Europe/Berlin',
      },
      recurrence_id: { time: utc(2026, 10, 19, 7), timezone: 'Europe/Berlin' },
      sequence: 4,
    };
    const text = buildCalendar('REQUEST', [master, exception]);
    expect(lines(text).filter((l) => l === `UID:${meeting.uid}`)).toHaveLength(2);
    expect(lines(text)).toContain('RECURRENCE-ID;TZID=Europe/Berlin:20261019T090000');
    expect(lines(text).filter((l) => l === 'BEGIN:VTIMEZONE')).toHaveLength(1);
    expect(parseCalendar(text).events).toEqual([master, exception]);

    // An all-day occurrence is named by its date; a RECURRENCE-ID without zone takes the event's.
    const day: IcsEvent = {
      uid: 'y@x',
      sequence: 1,
      when: { object: 'date', date: '2026-12-26' },
      recurrence_id: { date: '2026-12-24' },
      status: 'cancelled',
      busy: false,
      participants: [],
      updated_at: utc(2026, 9, 1),
    };
    expect(lines(buildCalendar('PUBLISH', [day]))).toContain('RECURRENCE-ID;VALUE=DATE:20261224');
    expect(only(buildCalendar('PUBLISH', [day]))).toEqual(day);
    const zoned = buildCalendar('PUBLISH', [{ ...exception, recurrence_id: { time: utc(2026, 10, 19, 7) } }]);
    expect(lines(zoned)).toContain('RECURRENCE-ID;TZID=Europe/Berlin:20261019T090000');
  });

  it('writes a CANCEL: STATUS:CANCELLED, everyone, the given SEQUENCE, no alarms', () => {
    const text = buildCalendar('CANCEL', [{ ...meeting, sequence: 4 }]);
    const all = lines(text);
    expect(all).toContain('METHOD:CANCEL');
    expect(all).toContain('STATUS:CANCELLED');
    expect(all).toContain('SEQUENCE:4');
    expect(all.filter((l) => l.startsWith('ATTENDEE'))).toHaveLength(4);
    expect(all).not.toContain('BEGIN:VALARM');
    const back = parseCalendar(text);
    expect(back.method).toBe('CANCEL');
    expect(back.events[0]).toMatchObject({
      uid: meeting.uid,
      sequence: 4,
      status: 'cancelled',
      participants: meeting.participants,
      resources: meeting.resources,
    });
  });

  it('writes a REPLY: the one attendee answering with its COMMENT, ORGANIZER, UID, SEQUENCE, DTSTAMP, DTSTART', () => {
    restoreClock = clock.set(() => Date.UTC(2026, 9, 3, 8, 30, 0));
    const reply: IcsEvent = {
      ...meeting,
      participants: [
        { email: 'Bee@Example.com', name: 'Bee Jones', status: 'maybe', comment: 'Might be late; sorry, traffic' },
      ],
    };
    const text = buildCalendar('REPLY', [reply]);
    const all = lines(text);
    expect(all).toContain('METHOD:REPLY');
    const vevent = all.slice(all.indexOf('BEGIN:VEVENT'), all.indexOf('END:VEVENT') + 1);
    expect(vevent).toEqual([
      'BEGIN:VEVENT',
      'UID:evt_1@switchboard.example',
      'SEQUENCE:3',
      'DTSTAMP:20261003T083000Z',
      'DTSTART;TZID=Europe/Berlin:20261012T090000',
      'DTEND;TZID=Europe/Berlin:20261012T100000',
      'SUMMARY:Design review',
      'ORGANIZER;CN=Olga Organizer:mailto:organizer@example.com',
      'ATTENDEE;CN=Bee Jones;CUTYPE=INDIVIDUAL;ROLE=REQ-PARTICIPANT;PARTSTAT=TENTATIVE:mailto:bee@example.com',
      'COMMENT:Might be late\\; sorry\\, traffic',
      'END:VEVENT',
    ]);
    expect(parseCalendar(text).events[0]!.participants).toEqual([
      { email: 'bee@example.com', name: 'Bee Jones', status: 'maybe', comment: 'Might be late; sorry, traffic' },
    ]);

    // For one occurrence of a series: its RECURRENCE-ID, and no RRULE.
    const occurrence = buildCalendar('REPLY', [
      { ...reply, recurrence: ['RRULE:FREQ=WEEKLY'], recurrence_id: { time: nine, timezone: 'Europe/Berlin' } },
    ]);
    expect(lines(occurrence)).toContain('RECURRENCE-ID;TZID=Europe/Berlin:20261012T090000');
    expect(
      lines(occurrence)
        .slice(lines(occurrence).indexOf('BEGIN:VEVENT'))
        .some((l) => l.startsWith('RRULE')),
    ).toBe(false);
    expect(parseCalendar(occurrence).events[0]!.recurrence_id).toEqual({ time: nine, timezone: 'Europe/Berlin' });
  });

  it('refuses a REPLY that does not name exactly one participant', () => {
    expect(() => buildCalendar('REPLY', [{ ...meeting, participants: [] }])).toThrow(IcsError);
    expect(() => buildCalendar('REPLY', [meeting])).toThrow(/exactly one participant/);
  });

  it('refuses what cannot be written, with IcsError', () => {
    expect(() => buildCalendar('REQUEST', [])).toThrow(IcsError);
    expect(() => buildCalendar('REQUEST', [{ ...meeting, uid: '' }])).toThrow(IcsError);
    expect(() => buildCalendar('REQUEST', [{ ...meeting, recurrence: ['FREQ=WEEKLY'] }])).toThrow(IcsError);
    expect(() => buildCalendar('REQUEST', [{ ...meeting, recurrence: ['SUMMARY:not a rule'] }])).toThrow(IcsError);
    expect(() => buildCalendar('REQUEST', [{ ...meeting, recurrence: ['RRULE:FREQ=SOMETIMES'] }])).toThrow(IcsError);
    expect(() =>
      buildCalendar('REQUEST', [{ ...meeting, recurrence: ['EXDATE;TZID=Mars/Olympus_Mons:20261012T090000'] }]),
    ).toThrow(IcsError);
    expect(() => buildCalendar('REQUEST', [{ ...meeting, when: { object: 'date', date: '2026-02-30' } }])).toThrow(
      IcsError,
    );
    expect(() =>
      buildCalendar('REQUEST', [{ ...meeting, when: { object: 'timespan', start_time: Number.NaN, end_time: 0 } }]),
    ).toThrow(IcsError);
    expect(() =>
      buildCalendar('REQUEST', [{ ...meeting, participants: [{ email: 'not-an-address', status: 'noreply' }] }]),
    ).toThrow(IcsError);
    expect(() => buildCalendar('NOTIFY' as 'REQUEST', [meeting])).toThrow(IcsError);
  });

  it('builds the same text whatever the process time zone', () => {
    restoreClock = clock.set(() => Date.UTC(2026, 9, 1, 12, 0, 0));
    const saved = process.env.TZ;
    try {
      const texts = ['UTC', 'Pacific/Auckland', 'America/Los_Angeles', 'Asia/Kolkata', 'Europe/Berlin'].map((tz) => {
        process.env.TZ = tz;
        return buildCalendar('REQUEST', [
          { ...meeting, recurrence: ['RRULE:FREQ=WEEKLY;COUNT=4', 'EXDATE;TZID=Europe/Berlin:20261019T090000'] },
        ]);
      });
      expect(new Set(texts).size).toBe(1);
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});
