import {
  CreateTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { ConflictException, CreateScheduleGroupCommand, type SchedulerClient } from '@aws-sdk/client-scheduler';
import { loadServerlessConfig, resolveName, type ServerlessConfig } from './serverless-config';

/**
 * Creates the table and queues that serverless.yml declares, on whatever endpoints the clients
 * point at (the local emulators, LocalStack or a real account), with the same key schema, indexes,
 * TTL, visibility timeouts and redrive policies as the deployed stack.
 */
type Resource = ServerlessConfig['resources']['Resources'][string];

export interface ProvisionedStack {
  tableName: string;
  /** Queue URL by CloudFormation logical ID (FanoutQueue, DeliveryQueue, ...). */
  queues: Record<string, { url: string; arn: string }>;
}

function resourcesOfType(config: ServerlessConfig, type: string): [string, Resource][] {
  return Object.entries(config.resources.Resources).filter(([, r]) => r.Type === type);
}

export async function createTable(
  dynamo: DynamoDBClient,
  tableName: string,
  config = loadServerlessConfig(),
): Promise<void> {
  const [, table] = resourcesOfType(config, 'AWS::DynamoDB::Table')[0]!;
  const p = table.Properties as Record<string, unknown>;
  const input: CreateTableCommandInput = {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: p.AttributeDefinitions as CreateTableCommandInput['AttributeDefinitions'],
    KeySchema: p.KeySchema as CreateTableCommandInput['KeySchema'],
    GlobalSecondaryIndexes: p.GlobalSecondaryIndexes as CreateTableCommandInput['GlobalSecondaryIndexes'],
    LocalSecondaryIndexes: p.LocalSecondaryIndexes as CreateTableCommandInput['LocalSecondaryIndexes'],
    StreamSpecification: p.StreamSpecification
      ? { StreamEnabled: true, ...(p.StreamSpecification as object) }
      : undefined,
  };
  try {
    await dynamo.send(new CreateTableCommand(input));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const ttl = p.TimeToLiveSpecification as { AttributeName: string; Enabled: boolean } | undefined;
  if (ttl?.Enabled) {
    try {
      await dynamo.send(new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: ttl }));
    } catch (error) {
      // Already enabled on an existing table.
      if (!String((error as Error).message).includes('TimeToLive is already enabled')) throw error;
    }
  }
}

/**
 * Creates every AWS::SQS::Queue, dead-letter queues first, with names resolved for `stage`: each
 * round creates at once every queue whose dead-letter queue exists.
 */
export async function createQueues(
  sqs: SQSClient,
  stage: string,
  config = loadServerlessConfig(),
): Promise<ProvisionedStack['queues']> {
  const created: ProvisionedStack['queues'] = {};
  const deadLetterTarget = (queue: Resource) =>
    (queue.Properties?.RedrivePolicy as { deadLetterTargetArn: { 'Fn::GetAtt': string[] } } | undefined)
      ?.deadLetterTargetArn['Fn::GetAtt'][0];
  let pending = resourcesOfType(config, 'AWS::SQS::Queue');
  while (pending.length) {
    const ready = pending.filter(([, q]) => {
      const target = deadLetterTarget(q);
      return !target || created[target];
    });
    if (!ready.length) throw new Error('serverless.yml: a queue redrives to a queue that is not declared');
    pending = pending.filter((entry) => !ready.includes(entry));
    await Promise.all(
      ready.map(async ([logicalId, queue]) => {
        const p = queue.Properties ?? {};
        const attributes: Record<string, string> = {};
        for (const name of [
          'VisibilityTimeout',
          'MessageRetentionPeriod',
          'DelaySeconds',
          'ReceiveMessageWaitTimeSeconds',
          'MaximumMessageSize',
        ]) {
          if (p[name] !== undefined) attributes[name] = String(p[name]);
        }
        const redrive = p.RedrivePolicy as { maxReceiveCount: number } | undefined;
        if (redrive) {
          attributes.RedrivePolicy = JSON.stringify({
            deadLetterTargetArn: created[deadLetterTarget(queue)!]!.arn,
            maxReceiveCount: redrive.maxReceiveCount,
          });
        }
        const name = resolveName(String(p.QueueName), config.service, stage);
        const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
        );
        created[logicalId] = { url: QueueUrl!, arn: Attributes!.QueueArn! };
      }),
    );
  }
  return created;
}

/**
 * Creates the AWS::Scheduler::ScheduleGroup of serverless.yml (scheduled sends) and returns its
 * name; an existing group is fine.
 */
export async function createScheduleGroup(
  scheduler: SchedulerClient,
  stage: string,
  config = loadServerlessConfig(),
): Promise<string> {
  const [, group] = resourcesOfType(config, 'AWS::Scheduler::ScheduleGroup')[0]!;
  const name = resolveName(String(group.Properties!.Name), config.service, stage);
  try {
    await scheduler.send(new CreateScheduleGroupCommand({ Name: name }));
  } catch (error) {
    if (!(error instanceof ConflictException)) throw error;
  }
  return name;
}
