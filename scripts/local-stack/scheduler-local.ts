import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { GetQueueUrlCommand, SendMessageCommand, SQSClient, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import { httpService, type RunningService } from './service';

/**
 * An EventBridge Scheduler stand-in for the local stack (there is none on npm): the operations the
 * project's code sends through @aws-sdk/client-scheduler, in the REST-JSON protocol the SDK speaks,
 * in this process, listening on loopback only. Point `AWS_ENDPOINT_URL_SCHEDULER` at it.
 *
 *   POST   /schedules/{Name}          CreateSchedule (one-time `at()` expressions only)
 *   GET    /schedules/{Name}          GetSchedule            ?groupName=
 *   DELETE /schedules/{Name}          DeleteSchedule         ?groupName=&clientToken=
 *   GET    /schedules                 ListSchedules          ?ScheduleGroup=&NamePrefix=&State=&MaxResults=&NextToken=
 *   POST   /schedule-groups/{Name}    CreateScheduleGroup
 *   GET    /schedule-groups/{Name}    GetScheduleGroup
 *   DELETE /schedule-groups/{Name}    DeleteScheduleGroup (with its schedules, at once)
 *   GET    /schedule-groups           ListScheduleGroups     ?NamePrefix=&MaxResults=&NextToken=
 *
 * UpdateSchedule and the tagging operations are answered ValidationException, unknown routes
 * UnknownOperationException. Errors go out as the service sends them: the status, the error name in
 * `x-amzn-errortype`, `{"Message": …}` as the body, which the SDK turns into its exception classes.
 *
 * Targets are SQS queues only (`arn:aws:sqs:<region>:<account>:<queue>`, looked up by name in the
 * SQS emulator at `sqsEndpoint`): when a schedule is due, Target.Input is sent as the message body,
 * retried with exponential backoff under the target's RetryPolicy, then sent to its dead-letter
 * queue with the attributes the service adds. Like the service, the moment of firing is spread over
 * the minute after the due time (`jitter`). Pending schedules sit in a heap ordered by firing time
 * under a single timer, so thousands of them, months ahead, cost one timer. Everything is in
 * memory, as long as the server. Signatures are not checked: it is reachable from this machine only.
 */
export interface SchedulerLocalOptions {
  /** 0 = any free port; listens on 127.0.0.1 only. */
  port: number;
  /** The SQS emulator the targets live in, e.g. http://127.0.0.1:4576. */
  sqsEndpoint: string;
  /** Used in the ARNs it returns (default us-east-1). */
  region?: string;
  /** Used in the ARNs it returns (default 123456789012). */
  accountId?: string;
  /** For its SQS client (default local/local). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Like the real service, fire at a uniformly random moment within `jitterSeconds` after the due time (default true, 60 s). false: fire exactly at the due time. */
  jitter?: boolean;
  jitterSeconds?: number;
  /** Base delay of retries of a failed target invocation (default 1000 ms, doubling, capped at 30 s). Tests make it small. */
  retryBaseMs?: number;
  /** Called after each invocation attempt outcome (for tests/benchmarks). */
  onFire?: (event: {
    name: string;
    group: string;
    dueAt: number;
    firedAt: number;
    ok: boolean;
    error?: string;
  }) => void;
}

export interface SchedulerLocal extends RunningService {
  /** Number of schedules currently held. */
  size(): number;
}

const HOST = '127.0.0.1';
const MAX_BODY = 1024 * 1024;
const DEFAULT_GROUP = 'default';
/** The longest the single timer sleeps before looking again (Node's timers overflow past ~24.8 days). */
const MAX_TIMER_MS = 60 * 60 * 1000;
const MAX_RETRY_DELAY_MS = 30_000;
/** SendMessage calls in flight at once (the SQS client's socket pool); the rest wait their turn. */
const MAX_IN_FLIGHT = 50;
const NAME = /^[0-9a-zA-Z_.-]+$/;
const AT = /^at\((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\)$/;
/** Standard and FIFO queue ARNs; the queue name is the last segment. */
const SQS_ARN = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:([a-zA-Z0-9_-]{1,80}(?:\.fifo)?)$/;

class ApiError extends Error {
  constructor(
    readonly type:
      | 'ValidationException'
      | 'ConflictException'
      | 'ResourceNotFoundException'
      | 'UnknownOperationException'
      | 'InternalServerException',
    message: string,
  ) {
    super(message);
  }
  get status(): number {
    return {
      ValidationException: 400,
      ConflictException: 409,
      ResourceNotFoundException: 404,
      UnknownOperationException: 404,
      InternalServerException: 500,
    }[this.type];
  }
}

type Json = Record<string, unknown>;

interface Schedule {
  name: string;
  group: string;
  arn: string;
  expression: string;
  timezone: string;
  /** The at() time, in UTC milliseconds. */
  dueAt: number;
  flexibleTimeWindow: Json;
  /** As sent, with RetryPolicy's defaults filled in (GetSchedule returns it so). */
  target: Json & {
    Arn: string;
    Input?: string;
    RetryPolicy: { MaximumEventAgeInSeconds: number; MaximumRetryAttempts: number };
  };
  state: 'ENABLED' | 'DISABLED';
  actionAfterCompletion: 'NONE' | 'DELETE';
  description?: string;
  startDate?: number;
  endDate?: number;
  kmsKeyArn?: string;
  clientToken?: string;
  created: number;
  modified: number;
  /** Set once it left the store: a heap entry pointing here is then skipped, a retry loop stops. */
  removed: boolean;
  /** Whether its entry is still in the heap (waiting to fire). */
  inHeap: boolean;
}

interface Group {
  name: string;
  arn: string;
  created: number;
  clientToken?: string;
  schedules: Map<string, Schedule>;
}

// ---- Request parsing --------------------------------------------------------------------------

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) return reject(new ApiError('ValidationException', 'Request body too large'));
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, errorType?: string) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
  });
  res.end(text);
}

/** The service's wording for a failed constraint; `field` is the member's camelCase name. */
const invalid = (field: string, value: unknown, constraint: string) =>
  new ApiError(
    'ValidationException',
    `1 validation error detected: Value ${value === undefined || value === null ? 'null' : `'${String(value)}'`} at '${field}' failed to satisfy constraint: ${constraint}`,
  );

function str(input: Json, key: string, field: string, required: boolean): string | undefined {
  const value = input[key];
  if (value === undefined || value === null) {
    if (required) throw invalid(field, value, 'Member must not be null');
    return undefined;
  }
  if (typeof value !== 'string') throw invalid(field, value, 'Member must be a string');
  return value;
}

function int(input: Json, key: string, field: string, min: number, max: number): number | undefined {
  const value = input[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(field, value, `Member must have value between ${min} and ${max}`);
  }
  return value;
}

function obj(input: Json, key: string, field: string, required: boolean): Json | undefined {
  const value = input[key];
  if (value === undefined || value === null) {
    if (required) throw invalid(field, value, 'Member must not be null');
    return undefined;
  }
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, '[object]', 'Member must be a structure');
  return value as Json;
}

function oneOf<T extends string>(input: Json, key: string, field: string, values: readonly T[], fallback?: T): T {
  const value = str(input, key, field, fallback === undefined) ?? fallback!;
  if (!(values as readonly string[]).includes(value))
    throw invalid(field, value, `Member must satisfy enum value set: [${values.join(', ')}]`);
  return value as T;
}

function checkName(value: string, field: string): string {
  if (value.length < 1 || value.length > 64) throw invalid(field, value, 'Member must have length between 1 and 64');
  if (!NAME.test(value)) throw invalid(field, value, 'Member must satisfy regular expression pattern: [0-9a-zA-Z-_.]+');
  return value;
}

/** Epoch seconds as the SDK sends timestamps in a JSON body. */
function timestamp(input: Json, key: string, field: string): number | undefined {
  const value = input[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(field, value, 'Member must be a timestamp');
  return value;
}

// ---- Time --------------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

/** A formatter for `timeZone`, or undefined when Intl does not know the zone. */
function formatter(timeZone: string): Intl.DateTimeFormat | undefined {
  let format = formatters.get(timeZone);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      return undefined;
    }
    formatters.set(timeZone, format);
  }
  return format;
}

/** How far `timeZone`'s wall clock is ahead of UTC at the instant `utc` (ms). */
function offsetAt(utc: number, format: Intl.DateTimeFormat): number {
  const part = Object.fromEntries(format.formatToParts(utc).map((p) => [p.type, Number(p.value)]));
  const wall = Date.UTC(part.year!, part.month! - 1, part.day!, part.hour!, part.minute!, part.second!);
  return wall - Math.floor(utc / 1000) * 1000;
}

/**
 * The UTC instant of an `at(yyyy-mm-ddThh:mm:ss)` expression read in `timeZone`. Two passes settle
 * the daylight-saving edges: a wall time skipped in spring lands an hour on, a repeated one in
 * autumn on its second occurrence.
 */
function dueTime(expression: string, timeZone: string): number {
  if (/^(rate|cron)\(/.test(expression)) {
    throw new ApiError(
      'ValidationException',
      `Invalid Schedule Expression ${expression}. The local EventBridge Scheduler emulator supports only one-time at() schedules, not rate() or cron().`,
    );
  }
  const match = AT.exec(expression);
  if (!match) throw new ApiError('ValidationException', `Invalid Schedule Expression ${expression}.`);
  const [y, mo, d, h, mi, s] = match.slice(1).map(Number) as [number, number, number, number, number, number];
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  // Date.UTC rolls 2025-02-30 over to March 2: such a date is invalid.
  const check = new Date(wall);
  if (check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    throw new ApiError('ValidationException', `Invalid Schedule Expression ${expression}.`);
  }
  const format = formatter(timeZone);
  if (!format) throw new ApiError('ValidationException', `Invalid ScheduleExpressionTimezone ${timeZone}.`);
  const first = wall - offsetAt(wall, format);
  return wall - offsetAt(first, format);
}

// ---- The pending schedules, ordered by firing time ---------------------------------------------

interface Entry {
  at: number;
  schedule: Schedule;
}

/** A binary min-heap on `at`. Deleted schedules are not taken out: they are skipped when popped. */
class Heap {
  items: Entry[] = [];

  push(entry: Entry) {
    const items = this.items;
    items.push(entry);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.at <= entry.at) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = entry;
  }

  peek(): Entry | undefined {
    return this.items[0];
  }

  pop(): Entry | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]!.at < items[left]!.at ? right : left;
      if (items[child]!.at >= last.at) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }

  /** Drops the entries of removed schedules (called when they pile up). */
  compact() {
    const live = this.items.filter((e) => !e.schedule.removed);
    this.items = [];
    for (const entry of live) this.push(entry);
  }
}

// ---- The server --------------------------------------------------------------------------------

export async function startSchedulerLocal(options: SchedulerLocalOptions): Promise<SchedulerLocal> {
  const region = options.region ?? 'us-east-1';
  const accountId = options.accountId ?? '123456789012';
  const jitterMs = options.jitter === false ? 0 : (options.jitterSeconds ?? 60) * 1000;
  const retryBaseMs = options.retryBaseMs ?? 1000;
  const sqs = new SQSClient({
    endpoint: options.sqsEndpoint,
    region,
    credentials: options.credentials ?? { accessKeyId: 'local', secretAccessKey: 'local' },
    // The schedule's RetryPolicy is the retry loop here, not the SDK's.
    maxAttempts: 1,
  });

  const groups = new Map<string, Group>();
  const groupArn = (name: string) => `arn:aws:scheduler:${region}:${accountId}:schedule-group/${name}`;
  groups.set(DEFAULT_GROUP, {
    name: DEFAULT_GROUP,
    arn: groupArn(DEFAULT_GROUP),
    created: Date.now() / 1000,
    schedules: new Map(),
  });
  const size = () => [...groups.values()].reduce((n, g) => n + g.schedules.size, 0);

  const findGroup = (name: string): Group => {
    const group = groups.get(name);
    if (!group) throw new ApiError('ResourceNotFoundException', `Schedule group ${name} does not exist.`);
    return group;
  };
  const findSchedule = (name: string, groupName: string | null): Schedule => {
    const schedule = findGroup(groupName || DEFAULT_GROUP).schedules.get(name);
    if (!schedule) throw new ApiError('ResourceNotFoundException', `Schedule ${name} does not exist.`);
    return schedule;
  };
  const removeSchedule = (schedule: Schedule) => {
    const group = groups.get(schedule.group);
    if (group?.schedules.get(schedule.name) === schedule) group.schedules.delete(schedule.name);
    if (!schedule.removed && schedule.inHeap) removedInHeap++;
    schedule.removed = true;
  };

  // -- Firing --

  const heap = new Heap();
  let removedInHeap = 0;
  let timer: NodeJS.Timeout | undefined;
  let timerAt = Infinity;
  const retryTimers = new Set<NodeJS.Timeout>();
  let stopped = false;

  /** (Re)arms the single timer for the earliest pending schedule, sleeping at most an hour. */
  const arm = () => {
    if (stopped) return;
    const next = heap.peek();
    if (next === undefined || next.at >= timerAt) return;
    clearTimeout(timer);
    timerAt = next.at;
    timer = setTimeout(tick, Math.min(Math.max(next.at - Date.now(), 0), MAX_TIMER_MS));
  };

  function tick() {
    timer = undefined;
    timerAt = Infinity;
    const now = Date.now();
    for (let entry = heap.peek(); entry !== undefined && entry.at <= now; entry = heap.peek()) {
      heap.pop();
      entry.schedule.inHeap = false;
      if (entry.schedule.removed) removedInHeap--;
      // Not awaited: every due schedule is invoked at once (bounded by the SendMessage pool).
      else void invoke(entry.schedule);
    }
    if (removedInHeap > 1000 && removedInHeap > heap.items.length / 2) {
      heap.compact();
      removedInHeap = 0;
    }
    arm();
  }

  const enqueue = (schedule: Schedule) => {
    if (schedule.state !== 'ENABLED') return;
    heap.push({ at: schedule.dueAt + Math.random() * jitterMs, schedule });
    schedule.inHeap = true;
    arm();
  };

  // A small semaphore: at most MAX_IN_FLIGHT SQS calls at a time, the others queue in order.
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  async function limited<T>(call: () => Promise<T>): Promise<T> {
    if (inFlight < MAX_IN_FLIGHT) inFlight++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await call();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else inFlight--;
    }
  }

  /** Queue URLs by queue name, looked up once (forgotten on failure, so a queue created later is found). */
  const queueUrls = new Map<string, Promise<string>>();
  const queueUrl = (queueName: string): Promise<string> => {
    let url = queueUrls.get(queueName);
    if (!url) {
      url = sqs.send(new GetQueueUrlCommand({ QueueName: queueName })).then((out) => out.QueueUrl!);
      queueUrls.set(queueName, url);
      url.catch(() => queueUrls.delete(queueName));
    }
    return url;
  };
  const sendTo = async (
    arn: string,
    body: string,
    extra: { MessageGroupId?: string; MessageAttributes?: Record<string, MessageAttributeValue> },
  ) => {
    const queueName = SQS_ARN.exec(arn)![1]!;
    try {
      const QueueUrl = await queueUrl(queueName);
      await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: body, ...extra }));
    } catch (error) {
      queueUrls.delete(queueName);
      throw error;
    }
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const handle = setTimeout(() => {
        retryTimers.delete(handle);
        resolve();
      }, ms);
      retryTimers.add(handle);
    });

  /**
   * One invocation: SendMessage of the Input to the target queue, retried with exponential backoff
   * until it succeeds or the RetryPolicy runs out (attempts or event age), then the dead-letter
   * queue; then ActionAfterCompletion.
   */
  async function invoke(schedule: Schedule) {
    const { target } = schedule;
    const body = target.Input ?? '{}';
    const groupId = (target.SqsParameters as { MessageGroupId?: string } | undefined)?.MessageGroupId;
    const { MaximumRetryAttempts, MaximumEventAgeInSeconds } = target.RetryPolicy;
    const firstAttempt = Date.now();
    let retries = 0;
    for (;;) {
      let error: unknown;
      let firedAt = Date.now();
      try {
        await limited(() => {
          firedAt = Date.now();
          return sendTo(target.Arn, body, groupId ? { MessageGroupId: groupId } : {});
        });
      } catch (caught) {
        error = caught;
      }
      if (stopped) return;
      const message =
        error === undefined ? undefined : error instanceof Error ? error.message || error.name : String(error);
      try {
        options.onFire?.({
          name: schedule.name,
          group: schedule.group,
          dueAt: schedule.dueAt,
          firedAt,
          ok: error === undefined,
          ...(message === undefined ? {} : { error: message }),
        });
      } catch {
        // An observer's failure is not the invocation's.
      }
      if (error === undefined) break;

      const delay = Math.min(retryBaseMs * 2 ** retries, MAX_RETRY_DELAY_MS);
      const exhausted =
        retries >= MaximumRetryAttempts
          ? 'MaximumRetryAttempts'
          : Date.now() + delay - firstAttempt > MaximumEventAgeInSeconds * 1000
            ? 'MaximumEventAgeInSeconds'
            : undefined;
      if (exhausted) {
        await deadLetter(schedule, error, exhausted, retries);
        if (stopped) return;
        break;
      }
      retries++;
      await sleep(delay);
      // Deleted while waiting for its retry: the service drops it too.
      if (stopped || schedule.removed) return;
    }
    if (schedule.actionAfterCompletion === 'DELETE') removeSchedule(schedule);
  }

  /** The Input, with the attributes the service puts on a dead-letter message; one attempt. */
  async function deadLetter(schedule: Schedule, error: unknown, condition: string, retries: number) {
    const dlq = (schedule.target.DeadLetterConfig as { Arn?: string } | undefined)?.Arn;
    if (!dlq) return;
    const text = (value: string) => ({ DataType: 'String', StringValue: value || '-' });
    const attributes: Record<string, MessageAttributeValue> = {
      ERROR_CODE: text(error instanceof Error ? error.name : 'Error'),
      ERROR_MESSAGE: text(error instanceof Error ? error.message : String(error)),
      EXECUTION_ID: text(randomUUID()),
      EXHAUSTED_RETRY_CONDITION: text(condition),
      IS_PAYLOAD_TRUNCATED: text('false'),
      RETRY_ATTEMPTS: text(String(retries)),
      SCHEDULED_TIME: text(new Date(schedule.dueAt).toISOString().replace(/\.\d{3}Z$/, 'Z')),
      SCHEDULE_ARN: text(schedule.arn),
      TARGET_ARN: text(schedule.target.Arn),
    };
    try {
      await limited(() => sendTo(dlq, schedule.target.Input ?? '{}', { MessageAttributes: attributes }));
    } catch {
      // Lost, as with the service when its dead-letter queue refuses the message.
    }
  }

  // -- Operations --

  function createSchedule(name: string, input: Json) {
    checkName(name, 'name');
    const groupName = checkName(str(input, 'GroupName', 'groupName', false) ?? DEFAULT_GROUP, 'groupName');
    const expression = str(input, 'ScheduleExpression', 'scheduleExpression', true)!;
    const targetIn = obj(input, 'Target', 'target', true)!;
    const window = obj(input, 'FlexibleTimeWindow', 'flexibleTimeWindow', true)!;
    const mode = oneOf(window, 'Mode', 'flexibleTimeWindow.mode', ['OFF', 'FLEXIBLE'] as const);
    const windowMinutes = int(window, 'MaximumWindowInMinutes', 'flexibleTimeWindow.maximumWindowInMinutes', 1, 1440);
    if (mode === 'FLEXIBLE' && windowMinutes === undefined)
      throw new ApiError('ValidationException', 'MaximumWindowInMinutes is required when Mode is FLEXIBLE.');
    const timezone = str(input, 'ScheduleExpressionTimezone', 'scheduleExpressionTimezone', false) ?? 'UTC';
    const state = oneOf(input, 'State', 'state', ['ENABLED', 'DISABLED'] as const, 'ENABLED');
    const actionAfterCompletion = oneOf(
      input,
      'ActionAfterCompletion',
      'actionAfterCompletion',
      ['NONE', 'DELETE'] as const,
      'NONE',
    );
    const description = str(input, 'Description', 'description', false);
    if (description !== undefined && description.length > 512)
      throw invalid('description', description, 'Member must have length less than or equal to 512');

    const targetArn = str(targetIn, 'Arn', 'target.arn', true)!;
    str(targetIn, 'RoleArn', 'target.roleArn', true);
    if (!SQS_ARN.test(targetArn)) {
      throw new ApiError(
        'ValidationException',
        `Invalid target ${targetArn}: the local EventBridge Scheduler emulator fires SQS queue targets (arn:aws:sqs:<region>:<account>:<queue>) only.`,
      );
    }
    const input_ = str(targetIn, 'Input', 'target.input', false);
    if (input_ === '') throw invalid('target.input', input_, 'Member must have length greater than or equal to 1');
    const retryIn = obj(targetIn, 'RetryPolicy', 'target.retryPolicy', false) ?? {};
    const retryPolicy = {
      MaximumEventAgeInSeconds:
        int(retryIn, 'MaximumEventAgeInSeconds', 'target.retryPolicy.maximumEventAgeInSeconds', 60, 86400) ?? 86400,
      MaximumRetryAttempts:
        int(retryIn, 'MaximumRetryAttempts', 'target.retryPolicy.maximumRetryAttempts', 0, 185) ?? 185,
    };
    const dlqIn = obj(targetIn, 'DeadLetterConfig', 'target.deadLetterConfig', false);
    const dlqArn = dlqIn && str(dlqIn, 'Arn', 'target.deadLetterConfig.arn', false);
    if (dlqArn !== undefined && !SQS_ARN.test(dlqArn)) {
      throw invalid(
        'target.deadLetterConfig.arn',
        dlqArn,
        'Member must satisfy regular expression pattern: arn:aws(-[a-z]+)?:sqs:[a-z0-9\\-]+:\\d{12}:[a-zA-Z0-9\\-_]+',
      );
    }
    const dueAt = dueTime(expression, timezone);

    const group = findGroup(groupName);
    const clientToken = str(input, 'ClientToken', 'clientToken', false);
    const existing = group.schedules.get(name);
    if (existing) {
      // The SDK retries a request with the same idempotency token: that is the same creation.
      if (clientToken !== undefined && existing.clientToken === clientToken) return { ScheduleArn: existing.arn };
      throw new ApiError('ConflictException', `Schedule ${name} already exists.`);
    }
    const now = Date.now() / 1000;
    const schedule: Schedule = {
      name,
      group: groupName,
      arn: `arn:aws:scheduler:${region}:${accountId}:schedule/${groupName}/${name}`,
      expression,
      timezone,
      dueAt,
      flexibleTimeWindow: {
        Mode: mode,
        ...(windowMinutes === undefined ? {} : { MaximumWindowInMinutes: windowMinutes }),
      },
      target: { ...targetIn, Arn: targetArn, RetryPolicy: retryPolicy },
      state,
      actionAfterCompletion,
      description,
      startDate: timestamp(input, 'StartDate', 'startDate'),
      endDate: timestamp(input, 'EndDate', 'endDate'),
      kmsKeyArn: str(input, 'KmsKeyArn', 'kmsKeyArn', false),
      clientToken,
      created: now,
      modified: now,
      removed: false,
      inHeap: false,
    };
    group.schedules.set(name, schedule);
    enqueue(schedule);
    return { ScheduleArn: schedule.arn };
  }

  const describeSchedule = (s: Schedule) => ({
    Arn: s.arn,
    Name: s.name,
    GroupName: s.group,
    ScheduleExpression: s.expression,
    ScheduleExpressionTimezone: s.timezone,
    StartDate: s.startDate,
    EndDate: s.endDate,
    Description: s.description,
    State: s.state,
    CreationDate: s.created,
    LastModificationDate: s.modified,
    KmsKeyArn: s.kmsKeyArn,
    Target: s.target,
    FlexibleTimeWindow: s.flexibleTimeWindow,
    ActionAfterCompletion: s.actionAfterCompletion,
  });

  /** A page of `items` (sorted by `key`) after the NextToken's key: the token is the last key, base64url. */
  function page<T>(items: T[], key: (item: T) => string, query: URLSearchParams): { page: T[]; NextToken?: string } {
    const max = query.get('MaxResults');
    const limit = max === null ? 100 : Number(max);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw invalid('maxResults', max, 'Member must have value between 1 and 100');
    const token = query.get('NextToken');
    let after = '';
    if (token !== null) {
      after = Buffer.from(token, 'base64url').toString('utf8');
      if (!after || Buffer.from(after).toString('base64url') !== token)
        throw new ApiError('ValidationException', 'Invalid NextToken.');
    }
    const sorted = items
      .map((item) => [key(item), item] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const rest = sorted.filter(([k]) => k > after);
    const out = rest.slice(0, limit);
    return {
      page: out.map(([, item]) => item),
      ...(rest.length > limit ? { NextToken: Buffer.from(out.at(-1)![0]).toString('base64url') } : {}),
    };
  }

  function listSchedules(query: URLSearchParams) {
    const groupName = query.get('ScheduleGroup');
    const prefix = query.get('NamePrefix') ?? '';
    const state = query.get('State');
    if (state !== null && state !== 'ENABLED' && state !== 'DISABLED')
      throw invalid('state', state, 'Member must satisfy enum value set: [ENABLED, DISABLED]');
    const from = groupName ? [groups.get(groupName)].filter((g) => g !== undefined) : [...groups.values()];
    const all = from
      .flatMap((g) => [...g.schedules.values()])
      .filter((s) => s.name.startsWith(prefix) && (state === null || s.state === state));
    // Group, then name; the NUL keeps "a"/"b" apart from "a-"/… whatever the characters.
    const { page: schedules, NextToken } = page(all, (s) => `${s.group}\u0000${s.name}`, query);
    return {
      Schedules: schedules.map((s) => ({
        Arn: s.arn,
        Name: s.name,
        GroupName: s.group,
        State: s.state,
        CreationDate: s.created,
        LastModificationDate: s.modified,
        Target: { Arn: s.target.Arn },
      })),
      NextToken,
    };
  }

  const describeGroup = (g: Group) => ({
    Arn: g.arn,
    Name: g.name,
    State: 'ACTIVE',
    CreationDate: g.created,
    LastModificationDate: g.created,
  });

  function createGroup(name: string, input: Json) {
    checkName(name, 'name');
    const clientToken = str(input, 'ClientToken', 'clientToken', false);
    const existing = groups.get(name);
    if (existing) {
      if (clientToken !== undefined && existing.clientToken === clientToken) return { ScheduleGroupArn: existing.arn };
      throw new ApiError('ConflictException', `Schedule group ${name} already exists.`);
    }
    groups.set(name, { name, arn: groupArn(name), created: Date.now() / 1000, clientToken, schedules: new Map() });
    return { ScheduleGroupArn: groupArn(name) };
  }

  function deleteGroup(name: string) {
    if (name === DEFAULT_GROUP)
      throw new ApiError('ValidationException', 'The default schedule group cannot be deleted.');
    const group = findGroup(name);
    for (const schedule of [...group.schedules.values()]) removeSchedule(schedule);
    groups.delete(name);
    return {};
  }

  const unsupported = (operation: string) => {
    throw new ApiError(
      'ValidationException',
      `${operation} is not supported by the local EventBridge Scheduler emulator.`,
    );
  };

  /** Routes a request to its operation by method and path, as the SDK's HTTP bindings lay them out. */
  function route(method: string, segments: string[], query: URLSearchParams, body: () => Json): unknown {
    const [collection, label, ...more] = segments;
    if (more.length === 0 && collection === 'schedules') {
      if (label === undefined) {
        if (method === 'GET') return listSchedules(query);
      } else if (method === 'POST') return createSchedule(label, body());
      else if (method === 'GET') return describeSchedule(findSchedule(label, query.get('groupName')));
      else if (method === 'DELETE') {
        removeSchedule(findSchedule(label, query.get('groupName')));
        return {};
      } else if (method === 'PUT') return unsupported('UpdateSchedule');
    }
    if (more.length === 0 && collection === 'schedule-groups') {
      if (label === undefined) {
        if (method === 'GET') {
          const prefix = query.get('NamePrefix') ?? '';
          const { page: list, NextToken } = page(
            [...groups.values()].filter((g) => g.name.startsWith(prefix)),
            (g) => g.name,
            query,
          );
          return { ScheduleGroups: list.map(describeGroup), NextToken };
        }
      } else if (method === 'POST') return createGroup(label, body());
      else if (method === 'GET') return describeGroup(findGroup(label));
      else if (method === 'DELETE') return deleteGroup(label);
    }
    if (collection === 'tags' && label !== undefined) return unsupported('Tagging');
    throw new ApiError('UnknownOperationException', `No operation at ${method} /${segments.join('/')}`);
  }

  const server = createServer((req, res) => {
    void (async () => {
      try {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const text = await readBody(req);
        let segments: string[];
        try {
          segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
        } catch {
          throw new ApiError('ValidationException', 'The request path is not valid percent-encoding');
        }
        const body = (): Json => {
          let input: unknown;
          try {
            input = text === '' ? {} : JSON.parse(text);
          } catch {
            throw new ApiError('ValidationException', 'The request body is not JSON');
          }
          if (typeof input !== 'object' || input === null || Array.isArray(input))
            throw new ApiError('ValidationException', 'The request body is not a JSON object');
          return input as Json;
        };
        send(res, 200, route(req.method ?? 'GET', segments, url.searchParams, body));
      } catch (error) {
        if (res.headersSent) return res.destroy();
        const known = error instanceof ApiError ? error : new ApiError('InternalServerException', 'Internal error');
        send(res, known.status, { Message: known.message }, known.type);
      }
    })();
  });
  const service = await httpService(server, options.port, HOST, () => {
    stopped = true;
    clearTimeout(timer);
    for (const handle of retryTimers) clearTimeout(handle);
    retryTimers.clear();
    groups.clear();
    sqs.destroy();
  });
  return { ...service, size };
}
