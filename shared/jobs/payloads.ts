import {
  DeliveryPayload,
  FiringPayload,
  JobPayload,
  NotificationPayload,
  SyncPayload,
  type Job,
} from '#schemas/queues';
import type { Notification } from '#shared/notifications/notification';
import type { DeliveryJob } from '#shared/webhooks/deliver';

/**
 * The queue boundary: a worker reads a message's body through here, so what it switches on is a
 * payload its schema (schemas/queues.ts) accepts. The schemas use a small part of JSON Schema
 * (type, const, enum, required, properties, additionalProperties: false, items, minLength, minimum,
 * oneOf, with a discriminator); this checks exactly that part, without bundling ajv into the workers
 * (test/unit/queue-payloads.test.ts holds it to ajv's answers, and fails on a keyword it does not know).
 */
export class MalformedPayloadError extends Error {
  constructor(queue: string, problem: string) {
    super(
      `${queue}: the message is not a payload of this queue (${problem}); it is not run, and goes to the dead-letter queue after its receives`,
    );
    this.name = 'MalformedPayloadError';
  }
}

type TypeName = 'object' | 'string' | 'integer' | 'array' | 'null';
type Schema = {
  type?: TypeName | readonly TypeName[];
  const?: unknown;
  enum?: readonly unknown[];
  required?: readonly string[];
  properties?: Readonly<Record<string, Schema>>;
  additionalProperties?: boolean;
  items?: Schema;
  minLength?: number;
  minimum?: number;
  oneOf?: readonly Schema[];
  discriminator?: { propertyName: string };
};

/** The keywords `problemOf` checks (and the annotations it ignores). */
export const KNOWN_KEYWORDS = new Set([
  'type',
  'const',
  'enum',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'minLength',
  'minimum',
  'oneOf',
  'discriminator',
  'description',
]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What is wrong with `value` as a `type` of `schema` (its type keywords: minLength, minimum, items), or undefined. */
function typeProblem(type: TypeName, schema: Schema, value: unknown, path: string): string | undefined {
  const at = path || 'the payload';
  switch (type) {
    case 'null':
      return value === null ? undefined : `${at} must be null`;
    case 'object':
      return isObject(value) ? undefined : `${at} must be an object`;
    case 'string':
      if (typeof value !== 'string') return `${at} must be a string`;
      if (schema.minLength !== undefined && [...value].length < schema.minLength)
        return `${at} must have at least ${schema.minLength} characters`;
      return undefined;
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) return `${at} must be an integer`;
      if (schema.minimum !== undefined && value < schema.minimum) return `${at} must be at least ${schema.minimum}`;
      return undefined;
    case 'array':
      if (!Array.isArray(value)) return `${at} must be an array`;
      if (schema.items) {
        for (const [i, item] of value.entries()) {
          const problem = problemOf(schema.items, item, `${path}/${i}`);
          if (problem) return problem;
        }
      }
      return undefined;
  }
}

/** What is wrong with `value` against `schema` (at `path`), or undefined when it validates. */
export function problemOf(schema: Schema, value: unknown, path = ''): string | undefined {
  const at = path || 'the payload';
  if (schema.type !== undefined) {
    const types = typeof schema.type === 'string' ? [schema.type] : schema.type;
    const problems = types.map((type) => typeProblem(type, schema, value, path));
    if (!problems.includes(undefined))
      return problems.length === 1 ? problems[0] : `${at} must be ${types.join(' or ')}`;
  }
  if ('const' in schema && value !== schema.const) return `${at} must be ${JSON.stringify(schema.const)}`;
  if (schema.enum && !schema.enum.includes(value))
    return `${at} must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  if (isObject(value)) {
    for (const name of schema.required ?? []) if (value[name] === undefined) return `${at} lacks '${name}'`;
    for (const [name, v] of Object.entries(value)) {
      const sub = schema.properties?.[name];
      if (sub) {
        const problem = problemOf(sub, v, `${path}/${name}`);
        if (problem) return problem;
      } else if (schema.additionalProperties === false) return `${at} has '${name}', which it may not have`;
    }
  }
  if (schema.oneOf) {
    const tag = schema.discriminator?.propertyName;
    if (tag) {
      const branch = schema.oneOf.find((b) => b.properties?.[tag]?.const === (value as Record<string, unknown>)[tag]);
      return branch
        ? problemOf(branch, value, path)
        : `${at} has an unknown '${tag}' ${JSON.stringify((value as Record<string, unknown>)[tag])}`;
    }
    const matching = schema.oneOf.filter((b) => problemOf(b, value, path) === undefined).length;
    if (matching !== 1) return `${at} must match exactly one of ${schema.oneOf.length} shapes (matches ${matching})`;
  }
  return undefined;
}

function read<T>(schema: Schema, queue: string, body: unknown): T {
  const problem = problemOf(schema, body);
  if (problem) throw new MalformedPayloadError(queue, problem);
  return body as T;
}

/** A job as the jobs queue delivers it; MalformedPayloadError when it is not one. */
export const readJob = (body: unknown): Job => read<Job>(JobPayload as Schema, 'jobs queue', body);

/** A firing as the scheduled-send queue delivers it; MalformedPayloadError when it is not one. */
export const readFiring = (body: unknown): FiringPayload =>
  read<FiringPayload>(FiringPayload as Schema, 'scheduled-send queue', body);

/** A notification as the fan-out queue delivers it; MalformedPayloadError when it is not one. */
export const readNotification = (body: unknown): Notification =>
  read<Notification>(NotificationPayload as Schema, 'fan-out queue', body);

/** A delivery as the delivery queue delivers it; MalformedPayloadError when it is not one. */
export const readDelivery = (body: unknown): DeliveryJob =>
  read<DeliveryJob>(DeliveryPayload as Schema, 'delivery queue', body);

/** A sync run as the mail-sync queue delivers it; MalformedPayloadError when it is not one. */
export const readSync = (body: unknown): SyncPayload =>
  read<SyncPayload>(SyncPayload as Schema, 'mail-sync queue', body);
