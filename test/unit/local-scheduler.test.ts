import {
  ConflictException,
  CreateScheduleCommand,
  CreateScheduleGroupCommand,
  DeleteScheduleCommand,
  DeleteScheduleGroupCommand,
  GetScheduleCommand,
  GetScheduleGroupCommand,
  ListScheduleGroupsCommand,
  ListSchedulesCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
  ValidationException,
  type CreateScheduleCommandInput,
} from '@aws-sdk/client-scheduler';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningService } from '../../scripts/local-stack/service';
import {
  startSchedulerLocal,
  type SchedulerLocal,
  type SchedulerLocalOptions,
} from '../../scripts/local-stack/scheduler-local';
import { startSqsLocal } from '../../scripts/local-stack/sqs-local';

/** The local EventBridge Scheduler emulator, driven by the real SDK client, firing into the real SQS emulator. */

type FireEvent = Parameters<NonNullable<SchedulerLocalOptions['onFire']>>[0];

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const queueArn = (name: string) => `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`;
const ROLE = `arn:aws:iam::${ACCOUNT}:role/scheduler`;

let sqsLocal: RunningService;
let sqs: SQSClient;
/** Jitter off, fast retries. */
let emulator: SchedulerLocal;
let client: SchedulerClient;
const fired: FireEvent[] = [];

/** The error a promise rejects with (attached at once, so no rejection goes unhandled). */
const failure = (sent: Promise<unknown>): Promise<unknown> =>
  sent.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );

/** `at()` of a UTC instant (whole seconds). */
const at = (ms: number) => `at(${new Date(ms).toISOString().slice(0, 19)})`;

/** A whole second at least `aheadMs` from now. */
const nextSecond = (aheadMs = 500) => Math.ceil((Date.now() + aheadMs) / 1000) * 1000;

/** The wall clock of `ms` in `timeZone`, as `at()` reads it. */
function atIn(ms: number, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(ms);
  const p = Object.fromEntries(parts.map((x) => [x.type, x.value]));
  return `at(${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second})`;
}

async function createQueue(name: string): Promise<string> {
  return (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
}

/** Receives until `count` messages arrived or `timeoutMs` passed. */
async function receive(queueUrl: string, count: number, timeoutMs: number): Promise<Message[]> {
  const messages: Message[] = [];
  const deadline = Date.now() + timeoutMs;
  while (messages.length < count && Date.now() < deadline) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
      }),
    );
    messages.push(...(out.Messages ?? []));
  }
  return messages;
}

/** Waits until `check` passes (it fails the test with its assertion after `timeoutMs`). */
const waitFor = (check: () => void, timeoutMs: number) => vi.waitFor(check, { timeout: timeoutMs, interval: 20 });

function schedule(
  name: string,
  overrides: Partial<CreateScheduleCommandInput> = {},
  target: Partial<NonNullable<CreateScheduleCommandInput['Target']>> = {},
): CreateScheduleCommandInput {
  return {
    Name: name,
    ScheduleExpression: at(Date.now() + 30 * 86_400_000),
    FlexibleTimeWindow: { Mode: 'OFF' },
    Target: { Arn: queueArn('scheduled'), RoleArn: ROLE, Input: JSON.stringify({ name }), ...target },
    ...overrides,
  };
}

beforeAll(async () => {
  sqsLocal = await startSqsLocal({ port: 0 });
  sqs = new SQSClient({ endpoint: sqsLocal.endpoint, region: REGION, credentials });
  emulator = await startSchedulerLocal({
    port: 0,
    sqsEndpoint: sqsLocal.endpoint,
    jitter: false,
    retryBaseMs: 20,
    onFire: (e) => fired.push(e),
  });
  client = new SchedulerClient({ endpoint: emulator.endpoint, region: REGION, credentials });
});

afterAll(async () => {
  client?.destroy();
  sqs?.destroy();
  await emulator?.stop();
  await sqsLocal?.stop();
});

describe('Local stack: EventBridge Scheduler emulator, API', () => {
  it('creates, gets, lists page by page and deletes schedules', async () => {
    // Prepare
    const due = Date.now() + 30 * 86_400_000;
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);

    try {
      // Act
      const created = await client.send(
        new CreateScheduleCommand(
          schedule(
            'crud-1',
            { ScheduleExpression: at(due), Description: 'the first', ActionAfterCompletion: 'DELETE' },
            { DeadLetterConfig: { Arn: queueArn('scheduled-dlq') } },
          ),
        ),
      );
      for (const name of ['crud-2', 'crud-3', 'crud-4', 'crud-5'])
        await client.send(new CreateScheduleCommand(schedule(name, name === 'crud-5' ? { State: 'DISABLED' } : {})));
      const got = await client.send(new GetScheduleCommand({ Name: 'crud-1' }));
      const pages: string[][] = [];
      let NextToken: string | undefined;
      do {
        const out = await client.send(new ListSchedulesCommand({ NamePrefix: 'crud-', MaxResults: 2, NextToken }));
        pages.push(out.Schedules!.map((s) => s.Name!));
        NextToken = out.NextToken;
      } while (NextToken);
      const disabled = await client.send(new ListSchedulesCommand({ NamePrefix: 'crud-', State: 'DISABLED' }));
      const inDefault = await client.send(new ListSchedulesCommand({ GroupName: 'default', NamePrefix: 'crud-1' }));

      // Assess
      expect(created.ScheduleArn).toBe(`arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/default/crud-1`);
      expect(got).toMatchObject({
        Arn: created.ScheduleArn,
        Name: 'crud-1',
        GroupName: 'default',
        ScheduleExpression: at(due),
        ScheduleExpressionTimezone: 'UTC',
        FlexibleTimeWindow: { Mode: 'OFF' },
        State: 'ENABLED',
        ActionAfterCompletion: 'DELETE',
        Description: 'the first',
        Target: {
          Arn: queueArn('scheduled'),
          RoleArn: ROLE,
          Input: '{"name":"crud-1"}',
          RetryPolicy: { MaximumEventAgeInSeconds: 86400, MaximumRetryAttempts: 185 },
          DeadLetterConfig: { Arn: queueArn('scheduled-dlq') },
        },
      });
      expect(got.CreationDate).toBeInstanceOf(Date);
      expect(Math.abs(got.CreationDate!.getTime() - Date.now())).toBeLessThan(5000);
      expect(got.LastModificationDate).toBeInstanceOf(Date);
      expect(pages).toEqual([['crud-1', 'crud-2'], ['crud-3', 'crud-4'], ['crud-5']]);
      expect(disabled.Schedules!.map((s) => s.Name)).toEqual(['crud-5']);
      expect(inDefault.Schedules).toEqual([
        {
          Arn: created.ScheduleArn,
          Name: 'crud-1',
          GroupName: 'default',
          State: 'ENABLED',
          CreationDate: got.CreationDate,
          LastModificationDate: got.LastModificationDate,
          Target: { Arn: queueArn('scheduled') },
        },
      ]);
      // 30 days ahead did not overflow a timer.
      expect(warnings.filter((w) => w.name === 'TimeoutOverflowWarning')).toEqual([]);

      // Act: delete
      const sizeBefore = emulator.size();
      for (const name of ['crud-1', 'crud-2', 'crud-3', 'crud-4', 'crud-5'])
        await client.send(new DeleteScheduleCommand({ Name: name }));

      // Assess
      expect(emulator.size()).toBe(sizeBefore - 5);
      await expect(client.send(new GetScheduleCommand({ Name: 'crud-1' }))).rejects.toBeInstanceOf(
        ResourceNotFoundException,
      );
      await expect(client.send(new DeleteScheduleCommand({ Name: 'crud-1' }))).rejects.toBeInstanceOf(
        ResourceNotFoundException,
      );
      expect((await client.send(new ListSchedulesCommand({ NamePrefix: 'crud-' }))).Schedules).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('answers ConflictException for a duplicate name, but not for a retry with the same ClientToken', async () => {
    // Prepare
    const first = await client.send(new CreateScheduleCommand(schedule('dup', { ClientToken: 'token-1' })));

    // Act
    const duplicate = await failure(client.send(new CreateScheduleCommand(schedule('dup'))));
    const retried = await client.send(new CreateScheduleCommand(schedule('dup', { ClientToken: 'token-1' })));

    // Assess
    expect(duplicate).toBeInstanceOf(ConflictException);
    expect(duplicate).toMatchObject({
      name: 'ConflictException',
      message: 'Schedule dup already exists.',
      $metadata: { httpStatusCode: 409 },
    });
    expect(retried.ScheduleArn).toBe(first.ScheduleArn);
    await client.send(new DeleteScheduleCommand({ Name: 'dup' }));
  });

  it('answers ResourceNotFoundException for an unknown schedule or group', async () => {
    // Act
    const unknown = await failure(client.send(new GetScheduleCommand({ Name: 'never-created' })));
    const unknownGroup = await failure(client.send(new GetScheduleCommand({ Name: 'x', GroupName: 'no-such-group' })));
    const createInUnknownGroup = await failure(
      client.send(new CreateScheduleCommand(schedule('x', { GroupName: 'no-such-group' }))),
    );

    // Assess
    expect(unknown).toBeInstanceOf(ResourceNotFoundException);
    expect(unknown).toMatchObject({
      message: 'Schedule never-created does not exist.',
      $metadata: { httpStatusCode: 404 },
    });
    expect(unknownGroup).toBeInstanceOf(ResourceNotFoundException);
    expect(unknownGroup).toMatchObject({ message: 'Schedule group no-such-group does not exist.' });
    expect(createInUnknownGroup).toBeInstanceOf(ResourceNotFoundException);
  });

  it('keeps schedule groups: create, get, list, conflict, delete with their schedules', async () => {
    // Act
    const created = await client.send(new CreateScheduleGroupCommand({ Name: 'tenant-a' }));
    const again = await failure(client.send(new CreateScheduleGroupCommand({ Name: 'tenant-a' })));
    const inGroup = await client.send(new CreateScheduleCommand(schedule('same-name', { GroupName: 'tenant-a' })));
    const inDefault = await client.send(new CreateScheduleCommand(schedule('same-name')));
    const group = await client.send(new GetScheduleGroupCommand({ Name: 'tenant-a' }));
    const groups = await client.send(new ListScheduleGroupsCommand({}));
    const listed = await client.send(new ListSchedulesCommand({ GroupName: 'tenant-a' }));
    const sizeBefore = emulator.size();
    await client.send(new DeleteScheduleGroupCommand({ Name: 'tenant-a' }));

    // Assess
    expect(created.ScheduleGroupArn).toBe(`arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule-group/tenant-a`);
    expect(again).toBeInstanceOf(ConflictException);
    expect(inGroup.ScheduleArn).toBe(`arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/tenant-a/same-name`);
    expect(inDefault.ScheduleArn).toBe(`arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/default/same-name`);
    expect(group).toMatchObject({ Arn: created.ScheduleGroupArn, Name: 'tenant-a', State: 'ACTIVE' });
    expect(group.CreationDate).toBeInstanceOf(Date);
    expect(groups.ScheduleGroups!.map((g) => g.Name)).toEqual(['default', 'tenant-a']);
    expect(listed.Schedules!.map((s) => s.Arn)).toEqual([inGroup.ScheduleArn]);
    expect(emulator.size()).toBe(sizeBefore - 1);
    await expect(client.send(new GetScheduleGroupCommand({ Name: 'tenant-a' }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
    await expect(
      client.send(new GetScheduleCommand({ Name: 'same-name', GroupName: 'tenant-a' })),
    ).rejects.toBeInstanceOf(ResourceNotFoundException);
    expect((await client.send(new GetScheduleCommand({ Name: 'same-name' }))).Arn).toBe(inDefault.ScheduleArn);
    await expect(client.send(new DeleteScheduleGroupCommand({ Name: 'default' }))).rejects.toBeInstanceOf(
      ValidationException,
    );
    await client.send(new DeleteScheduleCommand({ Name: 'same-name' }));
  });

  it.each([
    [
      'a rate() expression',
      schedule('v', { ScheduleExpression: 'rate(5 minutes)' }),
      /supports only one-time at\(\) schedules/,
    ],
    [
      'a cron() expression',
      schedule('v', { ScheduleExpression: 'cron(0 12 * * ? *)' }),
      /supports only one-time at\(\) schedules/,
    ],
    [
      'a malformed at()',
      schedule('v', { ScheduleExpression: 'at(2030-02-30T10:00:00)' }),
      /Invalid Schedule Expression at\(2030-02-30T10:00:00\)/,
    ],
    [
      'a name with a space',
      schedule('bad name'),
      /at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern/,
    ],
    ['a 65-character name', schedule('n'.repeat(65)), /Member must have length between 1 and 64/],
    [
      'no FlexibleTimeWindow',
      schedule('v', { FlexibleTimeWindow: undefined }),
      /Value null at 'flexibleTimeWindow' failed to satisfy constraint: Member must not be null/,
    ],
    [
      'FLEXIBLE without a window',
      schedule('v', { FlexibleTimeWindow: { Mode: 'FLEXIBLE' } }),
      /MaximumWindowInMinutes is required/,
    ],
    [
      'an unknown time zone',
      schedule('v', { ScheduleExpressionTimezone: 'Mars/Olympus_Mons' }),
      /Invalid ScheduleExpressionTimezone/,
    ],
    [
      'a Lambda target',
      schedule('v', {}, { Arn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:f` }),
      /SQS queue targets .* only/,
    ],
    ['no RoleArn', schedule('v', {}, { RoleArn: undefined }), /Value null at 'target.roleArn'/],
    [
      'too many retry attempts',
      schedule('v', {}, { RetryPolicy: { MaximumRetryAttempts: 186 } }),
      /Member must have value between 0 and 185/,
    ],
  ])('answers ValidationException for %s', async (_label, input, message) => {
    // Act
    const error = await failure(client.send(new CreateScheduleCommand(input)));

    // Assess
    expect(error).toBeInstanceOf(ValidationException);
    expect(error).toMatchObject({ message: expect.stringMatching(message), $metadata: { httpStatusCode: 400 } });
  });

  it('answers unsupported operations and unknown routes with an error, and keeps serving', async () => {
    // Act
    const update = await failure(client.send(new UpdateScheduleCommand(schedule('whatever'))));
    const unknown = await fetch(`${emulator.endpoint}/nothing/here?x=1`, { method: 'PATCH', body: 'not json' });
    const notJson = await fetch(`${emulator.endpoint}/schedules/x`, { method: 'POST', body: '{oops' });

    // Assess
    expect(update).toBeInstanceOf(ValidationException);
    expect(update).toMatchObject({
      message: 'UpdateSchedule is not supported by the local EventBridge Scheduler emulator.',
    });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');
    expect(await unknown.json()).toEqual({ Message: 'No operation at PATCH /nothing/here' });
    expect(notJson.status).toBe(400);
    expect(notJson.headers.get('x-amzn-errortype')).toBe('ValidationException');
    expect((await client.send(new ListSchedulesCommand({}))).Schedules).toBeDefined();
  });
});

describe('Local stack: EventBridge Scheduler emulator, firing', () => {
  it('fires an at() schedule in UTC into its queue on time, then deletes it (DELETE) or keeps it (NONE)', async () => {
    // Prepare
    const queue = await createQueue('fire-utc');
    const due = nextSecond();

    // Act
    await client.send(
      new CreateScheduleCommand(
        schedule(
          'utc-delete',
          { ScheduleExpression: at(due), ActionAfterCompletion: 'DELETE' },
          { Arn: queueArn('fire-utc'), Input: '{"n":1}' },
        ),
      ),
    );
    await client.send(
      new CreateScheduleCommand(
        schedule(
          'utc-keep',
          { ScheduleExpression: at(due), ScheduleExpressionTimezone: 'UTC' },
          { Arn: queueArn('fire-utc'), Input: '{"n":2}' },
        ),
      ),
    );
    const messages = await receive(queue, 2, 5000);
    const receivedAt = Date.now();
    await waitFor(() => expect(fired.filter((e) => e.name.startsWith('utc-'))).toHaveLength(2), 1000);

    // Assess
    expect(messages.map((m) => m.Body).sort()).toEqual(['{"n":1}', '{"n":2}']);
    expect(receivedAt - due).toBeLessThan(2000);
    const events = fired.filter((e) => e.name.startsWith('utc-'));
    expect(events).toHaveLength(2);
    for (const event of events) {
      expect(event).toMatchObject({ group: 'default', dueAt: due, ok: true });
      expect(event.firedAt).toBeGreaterThanOrEqual(due);
      expect(event.firedAt - due).toBeLessThan(1000);
    }
    await expect(client.send(new GetScheduleCommand({ Name: 'utc-delete' }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
    expect((await client.send(new GetScheduleCommand({ Name: 'utc-keep' }))).ActionAfterCompletion).toBe('NONE');
    await client.send(new DeleteScheduleCommand({ Name: 'utc-keep' }));
  });

  it('reads at() in its time zone (Europe/Paris) and fires at that UTC instant', async () => {
    // Prepare
    await createQueue('fire-paris');
    const due = nextSecond();
    const expression = atIn(due, 'Europe/Paris');

    // Act
    await client.send(
      new CreateScheduleCommand(
        schedule(
          'paris',
          {
            ScheduleExpression: expression,
            ScheduleExpressionTimezone: 'Europe/Paris',
            ActionAfterCompletion: 'DELETE',
          },
          { Arn: queueArn('fire-paris') },
        ),
      ),
    );
    await waitFor(() => expect(fired.map((e) => e.name)).toContain('paris'), 4000);

    // Assess
    expect(expression).not.toBe(at(due)); // Paris is never on UTC
    const event = fired.find((e) => e.name === 'paris')!;
    expect(event).toMatchObject({ dueAt: due, ok: true });
    expect(event.firedAt - due).toBeGreaterThanOrEqual(0);
    expect(event.firedAt - due).toBeLessThan(1000);
  });

  it('never fires a schedule deleted before it is due, nor a DISABLED one', async () => {
    // Prepare: a sentinel into the same queue, due a second after the other two.
    const queue = await createQueue('fire-deleted');
    const due = nextSecond();
    const target = { Arn: queueArn('fire-deleted') };
    await client.send(new CreateScheduleCommand(schedule('deleted-early', { ScheduleExpression: at(due) }, target)));
    await client.send(
      new CreateScheduleCommand(schedule('disabled', { ScheduleExpression: at(due), State: 'DISABLED' }, target)),
    );
    await client.send(
      new CreateScheduleCommand(
        schedule('sentinel', { ScheduleExpression: at(due + 1000), ActionAfterCompletion: 'DELETE' }, target),
      ),
    );

    // Act: the sentinel fires after the other two would have (a later turn of the emulator's timer).
    await client.send(new DeleteScheduleCommand({ Name: 'deleted-early' }));
    const messages = await receive(queue, 1, 5000);
    await waitFor(() => expect(fired.map((e) => e.name)).toContain('sentinel'), 1000);
    const { Messages: rest = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );

    // Assess
    expect([...messages, ...rest].map((m) => m.Body)).toEqual([JSON.stringify({ name: 'sentinel' })]);
    expect(fired.filter((e) => e.name === 'deleted-early' || e.name === 'disabled')).toEqual([]);
    expect((await client.send(new GetScheduleCommand({ Name: 'disabled' }))).State).toBe('DISABLED');
    await client.send(new DeleteScheduleCommand({ Name: 'disabled' }));
  });

  it('retries a failing target, then sends the Input to the dead-letter queue with the error attributes', async () => {
    // Prepare
    const dlq = await createQueue('fire-dlq');
    const due = nextSecond();
    const input = JSON.stringify({ draftId: 'd_1' });

    // Act
    const { ScheduleArn } = await client.send(
      new CreateScheduleCommand(
        schedule(
          'to-missing-queue',
          { ScheduleExpression: at(due), ActionAfterCompletion: 'DELETE' },
          {
            Arn: queueArn('no-such-queue'),
            Input: input,
            RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
            DeadLetterConfig: { Arn: queueArn('fire-dlq') },
          },
        ),
      ),
    );
    const [message] = await receive(dlq, 1, 5000);
    await waitFor(() => expect(emulator.size()).toBe(0), 1000);

    // Assess
    expect(message?.Body).toBe(input);
    const attribute = (name: string) => message!.MessageAttributes?.[name]?.StringValue;
    expect(attribute('EXHAUSTED_RETRY_CONDITION')).toBe('MaximumRetryAttempts');
    expect(attribute('RETRY_ATTEMPTS')).toBe('2');
    expect(attribute('TARGET_ARN')).toBe(queueArn('no-such-queue'));
    expect(attribute('SCHEDULE_ARN')).toBe(ScheduleArn);
    expect(attribute('SCHEDULED_TIME')).toBe(new Date(due).toISOString().replace('.000Z', 'Z'));
    expect(attribute('ERROR_CODE')).toBeTruthy();
    expect(attribute('ERROR_MESSAGE')).toBeTruthy();
    expect(message!.MessageAttributes!.ERROR_CODE!.DataType).toBe('String');
    const attempts = fired.filter((e) => e.name === 'to-missing-queue');
    expect(attempts).toHaveLength(3);
    expect(attempts.every((e) => !e.ok && typeof e.error === 'string' && e.error.length > 0)).toBe(true);
    await expect(client.send(new GetScheduleCommand({ Name: 'to-missing-queue' }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
  });

  it('fires 300 schedules due in the same second, each once', async () => {
    // Prepare: an emulator of its own. The shared one's SQS client may hold a connection idle since a
    // firing a whole number of seconds ago, which the SQS emulator (Node's server: 5 s keep-alive + 1 s)
    // can close just as the burst reuses it: that attempt fails and is retried, and is not "once".
    const events: FireEvent[] = [];
    const bulk = await startSchedulerLocal({
      port: 0,
      sqsEndpoint: sqsLocal.endpoint,
      jitter: false,
      onFire: (e) => events.push(e),
    });
    const bulkClient = new SchedulerClient({ endpoint: bulk.endpoint, region: REGION, credentials });
    try {
      const queue = await createQueue('fire-bulk');
      const due = nextSecond(1500);
      const names = Array.from({ length: 300 }, (_, i) => `bulk-${String(i).padStart(4, '0')}`);
      for (let i = 0; i < names.length; i += 100) {
        await Promise.all(
          names
            .slice(i, i + 100)
            .map((name) =>
              bulkClient.send(
                new CreateScheduleCommand(
                  schedule(
                    name,
                    { ScheduleExpression: at(due), ActionAfterCompletion: 'DELETE' },
                    { Arn: queueArn('fire-bulk'), Input: name },
                  ),
                ),
              ),
            ),
        );
      }
      expect(Date.now()).toBeLessThan(due);

      // Act
      await waitFor(() => expect(bulk.size()).toBe(0), 10_000);

      // Assess
      expect(events).toHaveLength(300);
      expect(events.every((e) => e.name.startsWith('bulk-') && e.ok && e.firedAt >= due)).toBe(true);
      expect(new Set(events.map((e) => e.name)).size).toBe(300);
      const messages = await receive(queue, 300, 10_000);
      expect(messages.map((m) => m.Body).sort()).toEqual(names);
    } finally {
      bulkClient.destroy();
      await bulk.stop();
    }
  });
});

describe('Local stack: EventBridge Scheduler emulator, jitter', () => {
  const events: FireEvent[] = [];
  let jittery: SchedulerLocal;
  let jitteryClient: SchedulerClient;

  beforeAll(async () => {
    jittery = await startSchedulerLocal({
      port: 0,
      sqsEndpoint: sqsLocal.endpoint,
      jitterSeconds: 3,
      onFire: (e) => events.push(e),
    });
    jitteryClient = new SchedulerClient({ endpoint: jittery.endpoint, region: REGION, credentials });
  });
  afterAll(async () => {
    jitteryClient?.destroy();
    await jittery?.stop();
  });

  it('fires within jitterSeconds after the due time', async () => {
    // Prepare
    const queue = await createQueue('fire-jitter');
    const due = nextSecond();
    const names = Array.from({ length: 8 }, (_, i) => `jitter-${i}`);

    // Act
    for (const name of names) {
      await jitteryClient.send(
        new CreateScheduleCommand(
          schedule(
            name,
            { ScheduleExpression: at(due), ActionAfterCompletion: 'DELETE' },
            { Arn: queueArn('fire-jitter') },
          ),
        ),
      );
    }
    await waitFor(() => expect(events).toHaveLength(names.length), 6000);

    // Assess
    expect(events.map((e) => e.name).sort()).toEqual(names);
    for (const event of events) {
      expect(event).toMatchObject({ dueAt: due, ok: true });
      expect(event.firedAt).toBeGreaterThanOrEqual(due);
      expect(event.firedAt).toBeLessThan(due + 3000 + 100);
    }
    // Spread over the window, not all at once (8 draws all within 200 ms of each other: ~1e-7).
    const times = events.map((e) => e.firedAt);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThan(200);
    expect(await receive(queue, names.length, 3000)).toHaveLength(names.length);
    expect(jittery.size()).toBe(0);
  });
});
