import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { holdSeconds, planFiring } from '#shared/scheduled-send/firing';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';

/**
 * What scheduled send asks of EventBridge Scheduler, exactly (the Scheduler is mocked; the rest of
 * the stack is real), and the timing rules that put a message on time despite the Scheduler's
 * one-minute precision.
 */
const schedulerMock = mockClient(SchedulerClient);
const { api } = useApi();
const now = () => Math.floor(Date.now() / 1000);
const at = (seconds: number) => `at(${new Date(seconds * 1000).toISOString().slice(0, 19)})`;

beforeEach(() => {
  schedulerMock.reset();
  schedulerMock
    .on(CreateScheduleCommand)
    .resolves({ ScheduleArn: 'arn:aws:scheduler:us-east-1:123456789012:schedule/g/s' });
  schedulerMock.on(DeleteScheduleCommand).resolves({});
});
afterAll(() => schedulerMock.restore());

describe('EventBridge Scheduler calls', () => {
  it('creates one one-shot schedule per scheduled message: at() 62 s before send_at in UTC, no flexible window, deleted after completion, retried, with a DLQ', async () => {
    // Arrange
    const grant = await makeAgentGrant(api);
    const sendAt = now() + 3600;

    // Act
    const response = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'someone@example.net' }],
      subject: 'Later',
      send_at: sendAt,
    });

    // Assess
    expect(response.status, response.text).toBe(202);
    const scheduleId = response.body.data.schedule_id;
    const calls = schedulerMock.commandCalls(CreateScheduleCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]!.args[0].input;
    const firing = JSON.parse(input.Target!.Input!);
    expect(firing).toEqual({
      kind: 'scheduled-send',
      schedule_id: scheduleId,
      grant_id: grant.id,
      application_id: expect.stringMatching(/^app_/),
      send_at: sendAt,
    });
    expect(input).toEqual({
      Name: scheduleId,
      GroupName: process.env.SCHEDULE_GROUP,
      ScheduleExpression: at(sendAt - 62),
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      ActionAfterCompletion: 'DELETE',
      State: 'ENABLED',
      Target: {
        Arn: process.env.SCHEDULED_SEND_QUEUE_ARN,
        RoleArn: process.env.SCHEDULER_ROLE_ARN,
        Input: JSON.stringify({
          kind: 'scheduled-send',
          schedule_id: scheduleId,
          grant_id: grant.id,
          application_id: firing.application_id,
          send_at: sendAt,
        }),
        RetryPolicy: { MaximumEventAgeInSeconds: 86400, MaximumRetryAttempts: 185 },
        DeadLetterConfig: { Arn: process.env.SCHEDULED_SEND_DLQ_ARN },
      },
    });
  });

  it('deletes the schedule when the message is cancelled, and a schedule already gone is fine', async () => {
    const grant = await makeAgentGrant(api);
    const first = (
      await api.post(`/v3/grants/${grant.id}/messages/send`, {
        to: [{ email: 'a@example.net' }],
        send_at: now() + 3600,
      })
    ).body.data.schedule_id;
    const second = (
      await api.post(`/v3/grants/${grant.id}/messages/send`, {
        to: [{ email: 'b@example.net' }],
        send_at: now() + 3600,
      })
    ).body.data.schedule_id;

    const cancelled = await api.delete(`/v3/grants/${grant.id}/messages/schedules/${first}`);
    schedulerMock
      .on(DeleteScheduleCommand)
      .rejects(
        new ResourceNotFoundException({ Message: 'Schedule not found', message: 'Schedule not found', $metadata: {} }),
      );
    const alreadyGone = await api.delete(`/v3/grants/${grant.id}/messages/schedules/${second}`);

    expect(cancelled.status, cancelled.text).toBe(200);
    expect(alreadyGone.status, alreadyGone.text).toBe(200);
    expect(schedulerMock.commandCalls(DeleteScheduleCommand).map((c) => c.args[0].input)).toEqual([
      { Name: first, GroupName: process.env.SCHEDULE_GROUP },
      { Name: second, GroupName: process.env.SCHEDULE_GROUP },
    ]);
  });

  it('creates no record when the schedule cannot be created (nothing would ever send it)', async () => {
    const grant = await makeAgentGrant(api);
    schedulerMock.on(CreateScheduleCommand).rejects(new Error('Scheduler unavailable'));

    const response = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'a@example.net' }],
      send_at: now() + 3600,
    });

    expect(response.status).toBe(500);
    expect((await api.get(`/v3/grants/${grant.id}/messages/schedules`)).body.data).toEqual([]);
  });
});

describe('timing', () => {
  it('sets the schedule so that its whole minute of precision ends 2 s before send_at', () => {
    expect(planFiring(10_000, 5_000)).toEqual({ fireAt: 10_000 - 62, direct: false });
    expect(planFiring(5_067, 5_000)).toEqual({ fireAt: 5_005, direct: false });
  });

  it('queues a message due too soon for that at once as well, with the schedule never set in the past', () => {
    expect(planFiring(5_060, 5_000)).toEqual({ fireAt: 5_005, direct: true });
    expect(planFiring(5_015, 5_000)).toEqual({ fireAt: 5_005, direct: true });
  });

  it('holds a firing for the whole seconds left, so the message arrives at or after send_at, at most 900 s at a time', () => {
    expect(holdSeconds(100, 40_000)).toBe(60);
    expect(holdSeconds(100, 40_001)).toBe(60);
    expect(holdSeconds(100, 99_999)).toBe(1);
    expect(holdSeconds(100, 100_000)).toBe(0);
    expect(holdSeconds(100, 130_000)).toBe(0);
    expect(holdSeconds(10_000, 0)).toBe(900);
  });
});
