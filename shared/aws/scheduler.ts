import {
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { requestHandler } from '#shared/aws/http';
import { env } from '#shared/config';
import { lazyClient } from '#shared/aws/lazy-client';
import { traced } from '#shared/aws/tracing';

/**
 * EventBridge Scheduler (its client made on first use, shared/aws/lazy-client.ts): one one-shot
 * `at()` schedule per scheduled send, in the deployment's own schedule group, whose target is the
 * scheduled-send queue (the endpoint comes from `AWS_ENDPOINT_URL_SCHEDULER` when set, like every
 * client).
 */
export const scheduler = lazyClient(() => traced(new SchedulerClient({ requestHandler })));

const GROUP = env.scheduleGroup();
const TARGET_QUEUE_ARN = env.scheduledSendQueueArn();
const DEAD_LETTER_ARN = env.scheduledSendDlqArn();
const ROLE_ARN = env.schedulerRoleArn();

/** `at(yyyy-mm-ddThh:mm:ss)` of a Unix time, in UTC. */
export const atExpression = (seconds: number) => `at(${new Date(seconds * 1000).toISOString().slice(0, 19)})`;

/**
 * Creates the schedule `name` firing at `fireAt` (Unix seconds, UTC) with `input` as the queue
 * message. Retried by the service for up to a day; what it cannot deliver goes to the dead-letter
 * queue. Deleted by the service once it has fired.
 */
export async function createOneShotSchedule(name: string, fireAt: number, input: object): Promise<void> {
  await scheduler.send(
    new CreateScheduleCommand({
      Name: name,
      GroupName: GROUP,
      ScheduleExpression: atExpression(fireAt),
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      ActionAfterCompletion: 'DELETE',
      State: 'ENABLED',
      Target: {
        Arn: TARGET_QUEUE_ARN,
        RoleArn: ROLE_ARN,
        Input: JSON.stringify(input),
        RetryPolicy: { MaximumEventAgeInSeconds: 86400, MaximumRetryAttempts: 185 },
        DeadLetterConfig: { Arn: DEAD_LETTER_ARN },
      },
    }),
  );
}

/** Deletes a schedule; false when there was none (it already fired, or never was created). */
export async function deleteOneShotSchedule(name: string): Promise<boolean> {
  try {
    await scheduler.send(new DeleteScheduleCommand({ Name: name, GroupName: GROUP }));
    return true;
  } catch (error) {
    if (error instanceof ResourceNotFoundException) return false;
    throw error;
  }
}
