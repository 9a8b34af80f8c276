import fc from 'fast-check';
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import {
  computeAvailability,
  covers,
  intersect,
  normalize,
  openHoursProblems,
  subtract,
  type EngineInput,
  type EngineParticipant,
  type Interval,
  type OpenHours,
} from '#shared/availability/engine';

/** The slot engine: hand-checked fixtures per method, DST in four zones, and properties over random calendars. */
const at = (iso: string, zone = 'UTC') => Math.round(DateTime.fromISO(iso, { zone }).toSeconds());
const local = (t: number, zone: string) => DateTime.fromSeconds(t, { zone }).toFormat("yyyy-MM-dd'T'HH:mm");
const everyDay = [0, 1, 2, 3, 4, 5, 6];
const hours = (timezone: string, start: string, end: string, days = everyDay, exdates: string[] = []): OpenHours => ({
  days,
  timezone,
  start,
  end,
  exdates,
});
const base = (over: Partial<EngineInput>): EngineInput => ({
  start: at('2026-06-01T00:00'),
  end: at('2026-06-02T00:00'),
  duration_minutes: 30,
  interval_minutes: 30,
  round_to: 15,
  method: 'collective',
  participants: [],
  ...over,
});
const span = (from: string, to: string, zone = 'UTC'): Interval => ({ start: at(from, zone), end: at(to, zone) });

describe('interval algebra', () => {
  it('normalizes, subtracts, intersects and answers coverage', () => {
    const a = normalize([
      { start: 10, end: 20 },
      { start: 0, end: 5 },
      { start: 5, end: 7 },
      { start: 15, end: 30 },
      { start: 40, end: 40 },
    ]);
    expect(a).toEqual([
      { start: 0, end: 7 },
      { start: 10, end: 30 },
    ]);
    expect(
      subtract(a, [
        { start: 2, end: 3 },
        { start: 6, end: 12 },
        { start: 25, end: 50 },
      ]),
    ).toEqual([
      { start: 0, end: 2 },
      { start: 3, end: 6 },
      { start: 12, end: 25 },
    ]);
    expect(
      intersect(a, [
        { start: 5, end: 11 },
        { start: 29, end: 35 },
      ]),
    ).toEqual([
      { start: 5, end: 7 },
      { start: 10, end: 11 },
      { start: 29, end: 30 },
    ]);
    expect(covers(a, 10, 30)).toBe(true);
    expect(covers(a, 6, 11)).toBe(false);
    expect(covers(a, 7, 8)).toBe(false);
  });
});

describe('open hours validation', () => {
  it('names every problem of an entry', () => {
    expect(openHoursProblems(hours('Europe/Berlin', '9:00', '17:00', [1, 2]), 'x')).toEqual([]);
    expect(openHoursProblems(hours('Europe/Berlin', '0:00', '24:00'), 'x')).toEqual([]);
    const problems = openHoursProblems(
      { days: [1, 7, -1], timezone: 'Mars/Olympus', start: '18:00', end: '9:00', exdates: ['2026-02-30', 'soon'] },
      'participants[0].open_hours[0]',
    );
    expect(problems.join('\n')).toMatch(/days must be days of the week 0 \(Sunday\) to 6 \(Saturday\); 7, -1 is not/);
    expect(problems.join('\n')).toMatch(/timezone must be an IANA time zone.*'Mars\/Olympus'/);
    expect(problems.join('\n')).toMatch(/start \(18:00\) must be before its end \(9:00\)/);
    expect(problems.join('\n')).toMatch(/'2026-02-30'.*not a date/);
    expect(problems.join('\n')).toMatch(/'soon'.*not a date/);
    expect(problems.every((p) => p.startsWith('participants[0].open_hours[0]'))).toBe(true);
    expect(openHoursProblems(hours('UTC', '24:00', '24:00'), 'x')[0]).toMatch(/start must be a time of day/);
    expect(openHoursProblems(hours('UTC', '9:60', '10:00'), 'x')[0]).toMatch(/start must be a time of day/);
    expect(openHoursProblems(hours('UTC', '9:00', '10:00', []), 'x')[0]).toMatch(/at least one day/);
  });
});

describe('hand-checked fixtures', () => {
  // Monday 2026-06-01, UTC. Ann busy 10:00–11:00, Bob busy 13:00–15:00; both open 9:00–17:00.
  const ann: EngineParticipant = {
    email: 'ann@example.com',
    busy: [span('2026-06-01T10:00', '2026-06-01T11:00')],
    fairness_count: 3,
  };
  const bob: EngineParticipant = {
    email: 'bob@example.com',
    busy: [span('2026-06-01T13:00', '2026-06-01T15:00')],
    fairness_count: 1,
  };
  const cat: EngineParticipant = {
    email: 'cat@example.com',
    busy: [span('2026-06-01T09:00', '2026-06-01T17:00')],
    fairness_count: 0,
  };
  const day = {
    default_open_hours: [hours('UTC', '9:00', '17:00')],
    duration_minutes: 60,
    interval_minutes: 60,
    round_to: 30,
  };
  const hhmm = (slots: { start_time: number; end_time: number; emails: string[] }[]) =>
    slots.map(
      (s) => `${local(s.start_time, 'UTC').slice(11)}-${local(s.end_time, 'UTC').slice(11)} ${s.emails.join(',')}`,
    );

  it('collective: only the hours both are free', () => {
    const result = computeAvailability(base({ ...day, participants: [bob, ann] }));
    expect(hhmm(result.time_slots)).toEqual([
      '09:00-10:00 ann@example.com,bob@example.com',
      '11:00-12:00 ann@example.com,bob@example.com',
      '12:00-13:00 ann@example.com,bob@example.com',
      '15:00-16:00 ann@example.com,bob@example.com',
      '16:00-17:00 ann@example.com,bob@example.com',
    ]);
    expect(result.order).toEqual([]);
  });

  it('collective with buffers: 15 minutes before and after busy time, slots realigned to round_to', () => {
    const result = computeAvailability(base({ ...day, buffer: { before: 15, after: 15 }, participants: [ann, bob] }));
    expect(hhmm(result.time_slots)).toEqual([
      '11:30-12:30 ann@example.com,bob@example.com',
      '15:30-16:30 ann@example.com,bob@example.com',
    ]);
  });

  it('max-availability: every hour someone is free, who is free in round-robin order', () => {
    const result = computeAvailability(base({ ...day, method: 'max-availability', participants: [ann, bob, cat] }));
    expect(result.order).toEqual(['cat@example.com', 'bob@example.com', 'ann@example.com']);
    expect(hhmm(result.time_slots)).toEqual([
      '09:00-10:00 bob@example.com,ann@example.com',
      '10:00-11:00 bob@example.com',
      '11:00-12:00 bob@example.com,ann@example.com',
      '12:00-13:00 bob@example.com,ann@example.com',
      '13:00-14:00 ann@example.com',
      '14:00-15:00 ann@example.com',
      '15:00-16:00 bob@example.com,ann@example.com',
      '16:00-17:00 bob@example.com,ann@example.com',
    ]);
  });

  it('max-fairness: only the fairer half (fewest counted events) is offered', () => {
    const result = computeAvailability(base({ ...day, method: 'max-fairness', participants: [ann, bob, cat] }));
    expect(result.order).toEqual(['cat@example.com', 'bob@example.com', 'ann@example.com']);
    // cat (0) and bob (1) make the fairer half of three; cat is busy all day, so bob's free hours remain.
    expect(hhmm(result.time_slots)).toEqual([
      '09:00-10:00 bob@example.com',
      '10:00-11:00 bob@example.com',
      '11:00-12:00 bob@example.com',
      '12:00-13:00 bob@example.com',
      '15:00-16:00 bob@example.com',
      '16:00-17:00 bob@example.com',
    ]);
  });

  it('max-fairness keeps everyone tied at the cut', () => {
    const even = [ann, bob, cat].map((p) => ({ ...p, fairness_count: 2 }));
    const result = computeAvailability(base({ ...day, method: 'max-fairness', participants: even }));
    expect(result.order).toEqual(['ann@example.com', 'bob@example.com', 'cat@example.com']);
    expect(result.time_slots[0]!.emails).toEqual(['ann@example.com', 'bob@example.com']);
  });

  it('round_to rounds a free period start up; interval steps from there', () => {
    const p: EngineParticipant = { email: 'a@example.com', busy: [span('2026-06-01T09:00', '2026-06-01T09:05')] };
    const result = computeAvailability(
      base({
        default_open_hours: [hours('UTC', '9:00', '11:00')],
        duration_minutes: 30,
        interval_minutes: 20,
        round_to: 15,
        participants: [p],
      }),
    );
    // Free from 09:05: 09:15, then 09:35 → 09:45, then 10:05 → 10:15; 10:45 would end at 11:15.
    expect(hhmm(result.time_slots).map((s) => s.slice(0, 11))).toEqual(['09:15-09:45', '09:45-10:15', '10:15-10:45']);
  });

  it('exdates and days remove whole days; no open hours means open all the time', () => {
    const p: EngineParticipant = { email: 'a@example.com', busy: [] };
    const week = {
      start: at('2026-06-01T00:00'),
      end: at('2026-06-08T00:00'),
      duration_minutes: 60,
      interval_minutes: 60,
      round_to: 60,
    };
    const weekdays = computeAvailability(
      base({
        ...week,
        participants: [{ ...p, open_hours: [hours('UTC', '9:00', '10:00', [1, 2, 3, 4, 5], ['2026-06-03'])] }],
      }),
    );
    expect(weekdays.time_slots.map((s) => local(s.start_time, 'UTC'))).toEqual([
      '2026-06-01T09:00',
      '2026-06-02T09:00',
      '2026-06-04T09:00',
      '2026-06-05T09:00',
    ]);
    expect(computeAvailability(base({ ...week, participants: [p] })).time_slots).toHaveLength(7 * 24);
  });

  it("a participant's own open hours replace the defaults", () => {
    const p: EngineParticipant = { email: 'a@example.com', busy: [], open_hours: [hours('UTC', '14:00', '15:00')] };
    const result = computeAvailability(base({ ...day, participants: [p] }));
    expect(hhmm(result.time_slots)).toEqual(['14:00-15:00 a@example.com']);
  });
});

describe('open hours across DST', () => {
  const firstSlots = (zone: string, from: string, to: string) => {
    const p: EngineParticipant = { email: 'a@example.com', busy: [], open_hours: [hours(zone, '9:00', '17:00')] };
    const result = computeAvailability(
      base({
        start: at(from, zone),
        end: at(to, zone),
        duration_minutes: 60,
        interval_minutes: 480,
        round_to: 30,
        participants: [p],
      }),
    );
    return result.time_slots.map((s) => [local(s.start_time, zone), new Date(s.start_time * 1000).getUTCHours()]);
  };

  it.each([
    [
      'America/New_York',
      '2026-03-07T00:00',
      '2026-03-09T00:00',
      [
        ['2026-03-07T09:00', 14],
        ['2026-03-08T09:00', 13],
      ],
    ],
    [
      'America/New_York',
      '2026-10-31T00:00',
      '2026-11-02T00:00',
      [
        ['2026-10-31T09:00', 13],
        ['2026-11-01T09:00', 14],
      ],
    ],
    [
      'Europe/Berlin',
      '2026-03-28T00:00',
      '2026-03-30T00:00',
      [
        ['2026-03-28T09:00', 8],
        ['2026-03-29T09:00', 7],
      ],
    ],
    [
      'Europe/Berlin',
      '2026-10-24T00:00',
      '2026-10-26T00:00',
      [
        ['2026-10-24T09:00', 7],
        ['2026-10-25T09:00', 8],
      ],
    ],
    [
      'Australia/Sydney',
      '2026-04-04T00:00',
      '2026-04-06T00:00',
      [
        ['2026-04-04T09:00', 22],
        ['2026-04-05T09:00', 23],
      ],
    ],
  ])('keeps 09:00 local in %s around %s', (zone, from, to, expected) => {
    expect(firstSlots(zone, from, to)).toEqual(expected);
  });

  it('an open day is 7 or 9 hours long on the days clocks change at night', () => {
    const p: EngineParticipant = {
      email: 'a@example.com',
      busy: [],
      open_hours: [hours('America/New_York', '0:00', '8:00')],
    };
    const count = (from: string, to: string) =>
      computeAvailability(
        base({
          start: at(from, 'America/New_York'),
          end: at(to, 'America/New_York'),
          duration_minutes: 60,
          interval_minutes: 60,
          round_to: 60,
          participants: [p],
        }),
      ).time_slots.length;
    expect(count('2026-03-08T00:00', '2026-03-09T00:00')).toBe(7);
    expect(count('2026-11-01T00:00', '2026-11-02T00:00')).toBe(9);
    expect(count('2026-06-01T00:00', '2026-06-02T00:00')).toBe(8);
  });

  it('open hours inside the spring-forward gap give nothing that day', () => {
    const p: EngineParticipant = {
      email: 'a@example.com',
      busy: [],
      open_hours: [hours('America/New_York', '2:00', '3:00')],
    };
    const result = computeAvailability(
      base({
        start: at('2026-03-07T00:00', 'America/New_York'),
        end: at('2026-03-10T00:00', 'America/New_York'),
        duration_minutes: 30,
        interval_minutes: 30,
        round_to: 30,
        participants: [p],
      }),
    );
    expect(result.time_slots.map((s) => local(s.start_time, 'America/New_York'))).toEqual([
      '2026-03-07T02:00',
      '2026-03-07T02:30',
      '2026-03-09T02:00',
      '2026-03-09T02:30',
    ]);
  });

  it('collective between New York and Asia/Kolkata (UTC+5:30) finds the half-hour-aligned overlap', () => {
    // Mon 2026-03-09: New York (EDT since Sunday) 8:00–12:00 = 12:00–16:00 UTC; Kolkata 17:00–21:00 = 11:30–15:30 UTC.
    const ny: EngineParticipant = {
      email: 'ny@example.com',
      busy: [],
      open_hours: [hours('America/New_York', '8:00', '12:00')],
    };
    const india: EngineParticipant = {
      email: 'in@example.com',
      busy: [],
      open_hours: [hours('Asia/Kolkata', '17:00', '21:00')],
    };
    const result = computeAvailability(
      base({
        start: at('2026-03-09T00:00'),
        end: at('2026-03-10T00:00'),
        duration_minutes: 60,
        interval_minutes: 30,
        round_to: 30,
        participants: [ny, india],
      }),
    );
    expect(
      result.time_slots.map(
        (s) =>
          `${local(s.start_time, 'Asia/Kolkata').slice(11)} IST = ${local(s.start_time, 'America/New_York').slice(11)} EDT`,
      ),
    ).toEqual([
      '17:30 IST = 08:00 EDT',
      '18:00 IST = 08:30 EDT',
      '18:30 IST = 09:00 EDT',
      '19:00 IST = 09:30 EDT',
      '19:30 IST = 10:00 EDT',
      '20:00 IST = 10:30 EDT',
    ]);
    // A week earlier New York is on EST (UTC−5): the overlap moves an hour.
    const earlier = computeAvailability(
      base({
        start: at('2026-03-02T00:00'),
        end: at('2026-03-03T00:00'),
        duration_minutes: 60,
        interval_minutes: 30,
        round_to: 30,
        participants: [ny, india],
      }),
    );
    expect(earlier.time_slots.map((s) => local(s.start_time, 'America/New_York').slice(11))).toEqual([
      '08:00',
      '08:30',
      '09:00',
      '09:30',
    ]);
  });
});

// ---- properties ----------------------------------------------------------------------------------

const ZONES = ['UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Kolkata', 'Australia/Sydney'];
const WINDOW_START = at('2026-03-05T00:00');

const clockOf = (minutes: number) => `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}`;
/** One open-hours entry starting at 04:00 or later (clear of the night-time DST changes), so the oracle below stays simple. */
const openHoursArb = fc
  .record({
    days: fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 7 }),
    timezone: fc.constantFrom(...ZONES),
    from: fc.integer({ min: 4 * 60, max: 20 * 60 }),
    length: fc.integer({ min: 30, max: 10 * 60 }),
  })
  .map(({ days, timezone, from, length }): OpenHours => ({
    days,
    timezone,
    start: clockOf(from),
    end: clockOf(Math.min(from + length, 23 * 60 + 59)),
  }));
const busyArb = fc
  .record({ offset: fc.integer({ min: -86_400, max: 12 * 86_400 }), length: fc.integer({ min: 60, max: 6 * 3600 }) })
  .map(({ offset, length }) => ({ start: WINDOW_START + offset, end: WINDOW_START + offset + length }));
const participantArb = (i: number) =>
  fc
    .record({
      busy: fc.array(busyArb, { maxLength: 25 }),
      open: fc.option(openHoursArb, { nil: undefined }),
      fairness: fc.integer({ min: 0, max: 4 }),
    })
    .map(({ busy, open, fairness }): EngineParticipant => ({
      email: `p${i}@example.com`,
      busy,
      open_hours: open ? [open] : undefined,
      fairness_count: fairness,
    }));
const inputArb = fc
  .record({
    offset: fc.integer({ min: 0, max: 288 }),
    days: fc.integer({ min: 1, max: 10 }),
    count: fc.integer({ min: 1, max: 4 }),
    duration: fc.constantFrom(15, 30, 45, 60, 90),
    interval: fc.constantFrom(5, 10, 15, 30, 60),
    roundTo: fc.constantFrom(5, 10, 15, 30, 60),
    before: fc.constantFrom(0, 5, 15, 30),
    after: fc.constantFrom(0, 10, 15, 60),
    method: fc.constantFrom('collective' as const, 'max-availability' as const, 'max-fairness' as const),
    defaults: fc.option(openHoursArb, { nil: undefined }),
  })
  .chain((o) =>
    fc.tuple(...Array.from({ length: o.count }, (_, i) => participantArb(i))).map((participants): EngineInput => ({
      start: WINDOW_START + o.offset * 300,
      end: WINDOW_START + o.offset * 300 + o.days * 86_400,
      duration_minutes: o.duration,
      interval_minutes: o.interval,
      round_to: o.roundTo,
      method: o.method,
      buffer: { before: o.before, after: o.after },
      default_open_hours: o.defaults ? [o.defaults] : undefined,
      participants,
    })),
  );

/** Oracle for open hours, independent of the engine: the slot's local start and end lie on one open day's hours. */
function insideOpenHours(h: OpenHours, start: number, end: number): boolean {
  const s = DateTime.fromSeconds(start, { zone: h.timezone });
  const e = DateTime.fromSeconds(end, { zone: h.timezone });
  const [from, to] = [h.start, h.end].map((c) => Number(c.split(':')[0]) * 60 + Number(c.split(':')[1])) as [
    number,
    number,
  ];
  return (
    h.days.includes(s.weekday % 7) &&
    !(h.exdates ?? []).includes(s.toISODate()!) &&
    s.toISODate() === e.toISODate() &&
    s.hour * 60 + s.minute >= from &&
    e.hour * 60 + e.minute <= to
  );
}

const shuffle = <T>(items: readonly T[], seed: number) => {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = (seed * (i + 7)) % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
};

describe('properties', () => {
  it('no slot overlaps busy time plus buffers, every slot lies in open hours, aligned to round_to and inside the window', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const { time_slots } = computeAvailability(input);
        const byEmail = new Map(input.participants.map((p) => [p.email, p]));
        for (const slot of time_slots) {
          expect(slot.end_time - slot.start_time).toBe(input.duration_minutes * 60);
          expect(slot.start_time % (input.round_to * 60)).toBe(0);
          expect(slot.start_time >= input.start && slot.end_time <= input.end).toBe(true);
          expect(slot.emails.length).toBeGreaterThan(0);
          for (const email of slot.emails) {
            const p = byEmail.get(email)!;
            for (const b of p.busy) {
              const overlaps =
                b.start - input.buffer!.before! * 60 < slot.end_time &&
                slot.start_time < b.end + input.buffer!.after! * 60;
              expect(overlaps).toBe(false);
            }
            const open = p.open_hours ?? input.default_open_hours;
            if (open) expect(open.some((h) => insideOpenHours(h, slot.start_time, slot.end_time))).toBe(true);
          }
          if (input.method === 'collective')
            expect([...slot.emails].sort()).toEqual(input.participants.map((p) => p.email).sort());
        }
        const starts = time_slots.map((s) => s.start_time);
        expect(starts).toEqual([...new Set(starts)].sort((a, b) => a - b));
      }),
      { numRuns: 300 },
    );
  });

  it('results do not depend on the order of participants or of their events', () => {
    fc.assert(
      fc.property(inputArb, fc.integer({ min: 1, max: 1000 }), (input, seed) => {
        const reordered: EngineInput = {
          ...input,
          participants: shuffle(input.participants, seed).map((p) => ({ ...p, busy: shuffle(p.busy, seed + 1) })),
        };
        expect(computeAvailability(reordered)).toEqual(computeAvailability(input));
      }),
      { numRuns: 200 },
    );
  });

  it('collective slots are exactly what each participant alone could take, at their shared times', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const collective = computeAvailability({ ...input, method: 'collective' });
        for (const p of input.participants) {
          const alone = computeAvailability({
            ...input,
            method: 'collective',
            interval_minutes: input.round_to,
            participants: [p],
          });
          const free = new Set(alone.time_slots.map((s) => s.start_time));
          for (const slot of collective.time_slots) expect(free.has(slot.start_time)).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('with interval = round_to no free aligned slot is missed, and max-availability offers each exactly to who is free', () => {
    fc.assert(
      fc.property(inputArb, (raw) => {
        const input = { ...raw, interval_minutes: raw.round_to };
        const step = input.round_to * 60;
        const duration = input.duration_minutes * 60;
        const collective = new Set(
          computeAvailability({ ...input, method: 'collective' }).time_slots.map((s) => s.start_time),
        );
        const most = new Map(
          computeAvailability({ ...input, method: 'max-availability' }).time_slots.map((s) => [s.start_time, s.emails]),
        );
        const singles = input.participants.map(
          (p) =>
            new Set(
              computeAvailability({ ...input, method: 'collective', participants: [p] }).time_slots.map(
                (s) => s.start_time,
              ),
            ),
        );
        for (let t = Math.ceil(input.start / step) * step; t + duration <= input.end; t += step) {
          const who = input.participants.filter((_, i) => singles[i]!.has(t)).map((p) => p.email);
          expect(collective.has(t)).toBe(who.length === input.participants.length);
          expect([...(most.get(t) ?? [])].sort()).toEqual(who.sort());
        }
      }),
      { numRuns: 100 },
    );
  });
});
