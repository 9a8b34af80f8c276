import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { DeliveryPayload, FiringPayload, JobPayload, NotificationPayload, SyncPayload } from '#schemas/queues';
import {
  KNOWN_KEYWORDS,
  MalformedPayloadError,
  problemOf,
  readDelivery,
  readFiring,
  readJob,
  readNotification,
  readSync,
} from '#shared/jobs/payloads';

/**
 * The queue boundary (shared/jobs/payloads.ts) checks payloads against schemas/queues.ts with its own
 * small reader of JSON Schema: held here to ajv's answers on valid and broken payloads of every
 * kind, and to the keywords it knows.
 */
const ajv = new Ajv({ strict: true, discriminator: true, allErrors: false });
const ajvJob = ajv.compile(JobPayload);
const ajvFiring = ajv.compile(FiringPayload);
const ajvNotification = ajv.compile(NotificationPayload);
const ajvDelivery = ajv.compile(DeliveryPayload);
const ajvSync = ajv.compile(SyncPayload);

const grant = { application_id: 'app_1', grant_id: 'grant_1' };
const VALID_JOBS: unknown[] = [
  { kind: 'purge-grant', ...grant, provider: 'agent' },
  { kind: 'purge-webhook', webhook_id: 'wh_1' },
  { kind: 'refresh-thread', ...grant, thread_id: 'thread_1' },
  { kind: 'message-stored', ...grant, thread_id: 'thread_1', message_id: 'msg_1' },
  { kind: 'merge-search', ...grant },
  { kind: 'index-message', ...grant, message_id: 'msg_1' },
  { kind: 'remove-contents', ...grant, owner_id: 'msg_1', postings: ['p'], blobs: [] },
  { kind: 'purge-list', application_id: 'app_1', list_id: 'list_1' },
  {
    kind: 'send-itip',
    ...grant,
    method: 'REPLY',
    to: [{ email: 'a@example.com', name: 'A' }],
    subject: 's',
    body: 'b',
    ics: 'BEGIN:VCALENDAR',
  },
  {
    kind: 'send-mail',
    ...grant,
    to: [{ email: 'a@example.com' }],
    subject: 's',
    body: 'b',
    purpose: 'booking confirmation',
    calendar: { method: 'REQUEST', ics: 'x' },
  },
  { kind: 'booking-reminders', booking_id: 'booking_1' },
  {
    kind: 'booking-event',
    booking_id: 'booking_1',
    version: 2,
    links: { manage: 'https://x.example/m' },
    cancel_ics: 'x',
  },
  { kind: 'group-event-delete', configuration_id: 'cfg_1', event_id: 'evt-1' },
  { kind: 'apply-itip', ...grant, sender: 'a@example.com', ics: 'BEGIN:VCALENDAR' },
  { kind: 'purge-calendar', ...grant, calendar_id: 'cal_1' },
  {
    kind: 'deliver-local',
    application_id: 'app_1',
    spool: 'outgoing/x/',
    message_id_header: '<x@y>',
    recipients: [grant],
    batch: 0,
    batches: 2,
  },
  { kind: 'messages-stored', ...grant, thread_ids: ['thread_1', 'thread_2'] },
  { kind: 'start-mail-sync', ...grant },
];

/** Ways to break a valid payload, each one something ajv refuses. */
const breakings: [string, (p: Record<string, unknown>) => unknown][] = [
  [
    'a required field removed',
    (p) => {
      const required = JobPayload.oneOf
        .find((b) => b.properties.kind.const === p.kind)!
        .required.filter((k) => k !== 'kind');
      return Object.fromEntries(Object.entries(p).filter(([k]) => k !== required.at(-1)));
    },
  ],
  ['an unknown field', (p) => ({ ...p, extra: 1 })],
  ['an unknown kind', (p) => ({ ...p, kind: 'no-such-job' })],
  ['a field of the wrong type', (p) => ({ ...p, [Object.keys(p).find((k) => k !== 'kind')!]: 12 })],
  ['not an object', () => 'job'],
  ['null', () => null],
];

describe('queue payloads', () => {
  it('knows every keyword the queue schemas use', () => {
    const used = new Set<string>();
    const walk = (node: unknown): void => {
      if (!node || typeof node !== 'object') return;
      if (Array.isArray(node)) return node.forEach(walk);
      for (const [key, value] of Object.entries(node)) {
        used.add(key);
        if (key === 'properties') Object.values(value as object).forEach(walk);
        else if (key === 'oneOf') (value as unknown[]).forEach(walk);
        else if (key === 'items') walk(value);
      }
    };
    walk(JobPayload);
    walk(FiringPayload);
    walk(DeliveryPayload);
    expect([...used].filter((k) => !KNOWN_KEYWORDS.has(k))).toEqual([]);
  });

  it('accepts a valid job of every kind, as ajv does', () => {
    const kinds = new Set(JobPayload.oneOf.map((b) => b.properties.kind.const));
    expect(new Set(VALID_JOBS.map((j) => (j as { kind: string }).kind))).toEqual(kinds);
    for (const job of VALID_JOBS) {
      expect(ajvJob(job), JSON.stringify(ajvJob.errors)).toBe(true);
      expect(problemOf(JobPayload as never, job)).toBeUndefined();
      expect(readJob(job)).toBe(job);
    }
  });

  it.each(breakings)('refuses a job with %s, as ajv does', (_name, breakIt) => {
    for (const job of VALID_JOBS) {
      const broken = breakIt(job as Record<string, unknown>);
      expect(ajvJob(broken)).toBe(false);
      expect(problemOf(JobPayload as never, broken), JSON.stringify(broken)).toBeDefined();
      expect(() => readJob(broken)).toThrow(MalformedPayloadError);
    }
  });

  it('refuses what is wrong inside a job: a recipient without its address, an unknown iTIP method, a negative batch', () => {
    const wrong = [
      { kind: 'send-itip', ...grant, method: 'PUBLISH', to: [], subject: 's', body: 'b', ics: 'x' },
      { kind: 'send-mail', ...grant, to: [{ name: 'no address' }], subject: 's', body: 'b', purpose: 'p' },
      {
        kind: 'deliver-local',
        application_id: 'app_1',
        spool: 's',
        message_id_header: 'm',
        recipients: [grant],
        batch: -1,
      },
      { kind: 'refresh-thread', ...grant, thread_id: '' },
    ];
    for (const job of wrong) {
      expect(ajvJob(job)).toBe(false);
      expect(() => readJob(job)).toThrow(/not a payload of this queue/);
    }
  });

  it('reads firings of both kinds, untagged scheduled sends included, and refuses others as ajv does', () => {
    const valid = [
      {
        kind: 'scheduled-send',
        schedule_id: 'sch_1',
        grant_id: 'grant_1',
        application_id: 'app_1',
        send_at: 1_800_000_000,
      },
      { schedule_id: 'sch_1', grant_id: 'grant_1', application_id: 'app_1', send_at: 1_800_000_000 },
      { kind: 'booking-reminder', booking_id: 'booking_1', reminder: 0, start: 1_800_000_000 },
    ];
    for (const firing of valid) {
      expect(ajvFiring(firing)).toBe(true);
      expect(readFiring(firing)).toBe(firing);
    }
    const invalid = [
      { kind: 'booking-reminder', schedule_id: 'sch_1' },
      { ...valid[0], send_at: 'soon' },
      { ...valid[2], kind: 'scheduled-send' },
      {},
      [],
    ];
    for (const firing of invalid) {
      expect(ajvFiring(firing)).toBe(false);
      expect(() => readFiring(firing)).toThrow(MalformedPayloadError);
    }
  });

  it('reads notifications and webhook deliveries, grant or no grant, and refuses others as ajv does', () => {
    const notification = {
      specversion: '1.0',
      type: 'message.created',
      source: '/switchboard',
      id: 'ntf_1',
      time: 1_800_000_000,
      data: { application_id: 'app_1', grant_id: 'grant_1', object: { id: 'msg_1' } },
    };
    const noGrant = { ...notification, data: { ...notification.data, grant_id: null } };
    const delivery = { application_id: 'app_1', webhook_id: 'wh_1', notification, attempt: 2 };
    for (const n of [notification, noGrant]) {
      expect(ajvNotification(n)).toBe(true);
      expect(readNotification(n)).toBe(n);
    }
    expect(ajvDelivery(delivery)).toBe(true);
    expect(readDelivery(delivery)).toBe(delivery);
    const badNotifications = [
      { ...notification, specversion: '0.3' },
      { ...notification, data: { ...notification.data, grant_id: 7 } },
      { ...notification, data: { application_id: 'app_1', grant_id: null } },
      { ...notification, time: 'now' },
    ];
    for (const n of badNotifications) {
      expect(ajvNotification(n)).toBe(false);
      expect(() => readNotification(n)).toThrow(MalformedPayloadError);
    }
    const badDeliveries = [
      { ...delivery, attempt: 0 },
      { ...delivery, notification: badNotifications[1] },
      { ...delivery, extra: true },
      { ...delivery, webhook_id: undefined },
    ];
    for (const d of badDeliveries) {
      expect(ajvDelivery(d)).toBe(false);
      expect(() => readDelivery(d)).toThrow(MalformedPayloadError);
    }
  });

  it('reads sync runs as ajv does: a request to sync, a scheduled run, and what is not one', () => {
    const runs = [
      { application_id: 'app_1', grant_id: 'grant_1' },
      { application_id: 'app_1', grant_id: 'grant_1', due: 1_800_000_000_000 },
    ];
    for (const run of runs) {
      expect(ajvSync(run)).toBe(true);
      expect(readSync(run)).toBe(run);
    }
    const bad = [
      { grant_id: 'grant_1' },
      { application_id: 'app_1', grant_id: 'grant_1', due: -1 },
      { application_id: 'app_1', grant_id: 'grant_1', due: 'soon' },
      { ...runs[0], extra: 1 },
    ];
    for (const run of bad) {
      expect(ajvSync(run)).toBe(false);
      expect(() => readSync(run)).toThrow(MalformedPayloadError);
    }
  });
});
