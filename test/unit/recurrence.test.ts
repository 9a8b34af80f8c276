import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import {
  normalizeRecurrence,
  occurrenceByKey,
  occurrencesBetween,
  seriesBounds,
  whenBounds,
  type Series,
} from '#shared/calendar/recurrence';

/** Recurrence expansion: DST-correct in the series' zone whatever the process zone, all-day edges, EXDATE/RDATE. */
const at = (iso: string, zone: string) => Math.floor(DateTime.fromISO(iso, { zone }).toSeconds());
const local = (t: number, zone: string) => DateTime.fromSeconds(t, { zone }).toFormat("yyyy-MM-dd'T'HH:mm");
const timed = (iso: string, zone: string, lines: string[], minutes = 60): Series => {
  const start = at(iso, zone);
  return {
    when: { object: 'timespan', start_time: start, end_time: start + minutes * 60, start_timezone: zone },
    zone,
    recurrence: lines,
  };
};
const all = (s: Series) => occurrencesBetween(s, 0, 4_000_000_000);

describe('recurrence expansion across DST', () => {
  it.each([
    ['America/New_York', '2026-03-02T09:00', ['2026-03-02T09:00', '2026-03-09T09:00'], [14, 13]],
    ['America/New_York', '2026-10-26T09:00', ['2026-10-26T09:00', '2026-11-02T09:00'], [13, 14]],
    ['Europe/Berlin', '2026-03-23T09:00', ['2026-03-23T09:00', '2026-03-30T09:00'], [8, 7]],
    ['Europe/Berlin', '2026-10-19T09:00', ['2026-10-19T09:00', '2026-10-26T09:00'], [7, 8]],
    ['Australia/Sydney', '2026-03-30T09:00', ['2026-03-30T09:00', '2026-04-06T09:00'], [22, 23]],
    ['Australia/Sydney', '2026-09-28T09:00', ['2026-09-28T09:00', '2026-10-05T09:00'], [23, 22]],
  ])('keeps 09:00 local in %s from %s', (zone, start, expected, utcHours) => {
    const occurrences = all(timed(start, zone, ['RRULE:FREQ=WEEKLY;COUNT=2']));
    expect(occurrences.map((o) => local(o.start, zone))).toEqual(expected);
    expect(occurrences.map((o) => new Date(o.start * 1000).getUTCHours())).toEqual(utcHours);
    expect(occurrences.every((o) => o.end - o.start === 3600)).toBe(true);
  });

  it('moves a daily 02:30 forward over the spring-forward gap', () => {
    const occurrences = all(timed('2026-03-07T02:30', 'America/New_York', ['RRULE:FREQ=DAILY;COUNT=3']));
    expect(occurrences.map((o) => local(o.start, 'America/New_York'))).toEqual([
      '2026-03-07T02:30',
      '2026-03-08T03:30',
      '2026-03-09T02:30',
    ]);
  });

  it('does not depend on the process time zone', () => {
    const before = process.env.TZ;
    const series = timed('2026-10-26T09:00', 'America/New_York', ['RRULE:FREQ=WEEKLY;COUNT=3']);
    const reference = all(series);
    for (const zone of ['Asia/Kolkata', 'Pacific/Auckland', 'America/Los_Angeles']) {
      process.env.TZ = zone;
      expect(all(series)).toEqual(reference);
    }
    process.env.TZ = before;
  });
});

describe('recurrence lines', () => {
  it('removes EXDATEs in Z, TZID and floating forms and adds RDATEs', () => {
    const zone = 'Europe/Berlin';
    const series = timed('2026-12-01T10:00', zone, [
      'RRULE:FREQ=DAILY;COUNT=6',
      'EXDATE:20261202T090000Z',
      'EXDATE;TZID=Europe/Berlin:20261203T100000',
      'EXDATE:20261204T100000',
      'RDATE;TZID=Europe/Berlin:20261220T150000',
    ]);
    expect(all(series).map((o) => local(o.start, zone))).toEqual([
      '2026-12-01T10:00',
      '2026-12-05T10:00',
      '2026-12-06T10:00',
      '2026-12-20T15:00',
    ]);
  });

  it('expands all-day series with their span (end exclusive), read in the zone', () => {
    const zone = 'America/New_York';
    const series: Series = {
      when: { object: 'datespan', start_date: '2026-10-30', end_date: '2026-11-01' },
      zone,
      recurrence: ['RRULE:FREQ=WEEKLY;COUNT=2', 'EXDATE;VALUE=DATE:20261106'],
    };
    const [first, ...rest] = all(series);
    expect(rest).toEqual([]);
    expect(first!.when).toEqual({ object: 'datespan', start_date: '2026-10-30', end_date: '2026-11-01' });
    expect(first!.key).toBe('20261030');
    expect(first!.start).toBe(at('2026-10-30T00:00', zone));
    expect(first!.end).toBe(at('2026-11-01T00:00', zone));
    const dates = all({ when: { object: 'date', date: '2026-10-31' }, zone, recurrence: ['RRULE:FREQ=DAILY;COUNT=2'] });
    // Nov 1 is 25 hours long in New York.
    expect(dates.map((o) => [o.when, (o.end - o.start) / 3600])).toEqual([
      [{ object: 'date', date: '2026-10-31' }, 24],
      [{ object: 'date', date: '2026-11-01' }, 25],
    ]);
    expect(whenBounds({ object: 'datespan', start_date: '2026-03-08', end_date: '2026-03-09' }, zone)).toEqual({
      start: at('2026-03-08T00:00', zone),
      end: at('2026-03-09T00:00', zone),
    });
  });

  it('finds occurrences by key, with their neighbours; excluded or off-pattern keys are none', () => {
    const series = timed('2026-12-07T15:00', 'UTC', ['RRULE:FREQ=WEEKLY', 'EXDATE:20261214T150000Z']);
    const found = occurrenceByKey(series, '20261221T150000Z');
    expect(found?.occurrence.start).toBe(at('2026-12-21T15:00', 'UTC'));
    expect(found?.previous?.key).toBe('20261207T150000Z');
    expect(found?.next?.key).toBe('20261228T150000Z');
    expect(occurrenceByKey(series, '20261214T150000Z')).toBeUndefined();
    expect(occurrenceByKey(series, '20261215T150000Z')).toBeUndefined();
    expect(seriesBounds(series).last_end).toBeNull();
    expect(seriesBounds(timed('2026-12-07T15:00', 'UTC', ['RRULE:FREQ=WEEKLY;UNTIL=20261221T150000Z'])).last_end).toBe(
      at('2026-12-21T16:00', 'UTC'),
    );
  });

  it('keeps only occurrences overlapping the window', () => {
    const series = timed('2026-12-07T15:00', 'UTC', ['RRULE:FREQ=DAILY;COUNT=5']);
    const from = at('2026-12-08T16:00', 'UTC'); // the end of the Dec 8 occurrence: excluded
    const to = at('2026-12-10T15:00', 'UTC'); // the start of the Dec 10 one: excluded
    expect(occurrencesBetween(series, from, to).map((o) => o.key)).toEqual(['20261209T150000Z']);
    expect(occurrencesBetween(series, 0, 4_000_000_000, 2)).toHaveLength(2);
  });

  it.each([
    [['RRULE:FREQ=MONTHLY;BYDAY=1MO,3WE'], 'several weekday indices'],
    [['RRULE:FREQ=MONTHLY;BYDAY=2TU,4TU'], 'several weekday indices'],
    [['RRULE:FREQ=HOURLY'], 'DAILY, WEEKLY, MONTHLY or YEARLY'],
    [['RRULE:FREQ=WEEKLY;COUNT=2;UNTIL=20270101T000000Z'], 'both COUNT and UNTIL'],
    [['RRULE:FREQ=WEEKLY;BYDAY=XX'], 'BYDAY'],
    [['EXRULE:FREQ=DAILY'], "'EXRULE' is not supported"],
    [['RRULE:FREQ=DAILY', 'RRULE:FREQ=WEEKLY'], 'second one'],
    [['EXDATE:20261201T100000Z'], 'needs one RRULE'],
    [['RRULE:FREQ=DAILY', 'EXDATE;TZID=Mars/Base:20261201T100000'], 'Unknown TZID'],
    [['RRULE:FREQ=DAILY;COUNT=1', 'EXDATE:20261201T100000Z'], 'no occurrence'],
  ])('refuses %j', (lines, fragment) => {
    expect(() => normalizeRecurrence(lines, timed('2026-12-01T10:00', 'UTC', []).when, 'UTC')).toThrow(fragment);
  });

  it('accepts single-index and index-free monthly BYDAY and canonicalises lines', () => {
    const when = timed('2026-12-01T10:00', 'UTC', []).when;
    expect(normalizeRecurrence([' rrule:freq=monthly;byday=2TU '], when, 'UTC')).toEqual([
      'RRULE:FREQ=MONTHLY;BYDAY=2TU',
    ]);
    expect(normalizeRecurrence(['RRULE:FREQ=MONTHLY;BYDAY=-1FR'], when, 'UTC')).toEqual([
      'RRULE:FREQ=MONTHLY;BYDAY=-1FR',
    ]);
    expect(
      normalizeRecurrence(['RRULE:FREQ=WEEKLY;BYDAY=MO,WE', 'exdate;tzid=Europe/Berlin:20261207T110000'], when, 'UTC'),
    ).toEqual(['RRULE:FREQ=WEEKLY;BYDAY=MO,WE', 'EXDATE;TZID=Europe/Berlin:20261207T110000']);
  });
});
