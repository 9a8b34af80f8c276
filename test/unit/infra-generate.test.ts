import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getAtt } from '../../scripts/infra/cfn';
import { differences, summarize } from '../../scripts/infra/compare';
import { HEADER, generateServerlessYml, grantsOf } from '../../scripts/infra/generate';
import {
  ROOT,
  loadServerlessConfig,
  parseServerlessConfig,
  type ServerlessConfig,
} from '../../scripts/local-stack/serverless-config';

/**
 * serverless.yml is generated (scripts/infra/generate.ts). The checked-in file must be what the code
 * produces now, and what it produces must deploy what the hand-written file deployed before it
 * (test/fixtures/infra/serverless-before.json: that file as loadServerlessConfig() read it): the same
 * resources, functions, events, settings and, per role, the same action × resource pairs, except
 * the differences listed below with their reasons.
 *
 * A change of the infrastructure made on purpose later (a new route, a call the code did not make)
 * shows here too, as a snapshot test would: once reviewed, `npm run generate:infra -- --snapshot`
 * rewrites the snapshot from the generated file, and INTENDED becomes empty.
 */
const before = JSON.parse(
  readFileSync(join(ROOT, 'test/fixtures/infra/serverless-before.json'), 'utf8'),
) as ServerlessConfig;

const INTENDED: { added: string[]; removed: string[] } = { added: [], removed: [] };

let generation: Promise<string> | undefined;
/** One generation for the tests below (a bundle scan of every function). */
const generated = () => (generation ??= generateServerlessYml());

describe('serverless.yml (generated)', () => {
  it(
    'says it is generated, and is what scripts/infra/generate.ts produces from the code now (npm run generate:infra)',
    { timeout: 120_000 },
    async () => {
      const text = readFileSync(join(ROOT, 'serverless.yml'), 'utf8');
      expect(text.split('\n')[0]).toBe(HEADER);
      expect(text === (await generated()), 'serverless.yml is stale: run npm run generate:infra').toBe(true);
    },
  );

  it('deploys what the hand-written serverless.yml did, but for the listed differences', () => {
    const diff = differences(summarize(before), summarize(loadServerlessConfig()));
    const hint =
      'the infrastructure differs from the reviewed snapshot: if on purpose, npm run generate:infra -- --snapshot and empty INTENDED';
    expect(diff.added, hint).toEqual([...INTENDED.added].sort());
    expect(diff.removed, hint).toEqual([...INTENDED.removed].sort());
  });

  it('compares every part of the configuration (a changed resource, event, setting or permission shows)', () => {
    const config = structuredClone(loadServerlessConfig());
    config.resources.Resources.JobsQueue!.Properties!.VisibilityTimeout = 1;
    config.functions.grants!.events!.pop();
    config.provider.timeout = 1;
    const policy = (
      config.resources.Resources.FallbackFunctionRole!.Properties!.Policies as {
        PolicyDocument: { Statement: { Action: string[] }[] };
      }[]
    )[0]!;
    policy.PolicyDocument.Statement[0]!.Action.pop();
    const diff = differences(summarize(loadServerlessConfig()), summarize(config));
    const where = (lines: string[]) => lines.map((line) => line.split(' ').slice(0, 2).join(' '));
    expect(where(diff.removed)).toEqual([
      'function grants',
      'permission FallbackFunctionRole',
      'resource JobsQueue',
      'section provider',
    ]);
    expect(where(diff.added)).toEqual(['resource JobsQueue', 'section provider']);
  });

  it(
    'reads its own output back as the framework would (intrinsics in their long form)',
    { timeout: 120_000 },
    async () => {
      const config = parseServerlessConfig(await generated());
      expect(config.functions.outbox!.events![0]).toMatchObject({
        stream: { arn: { 'Fn::GetAtt': ['Table', 'StreamArn'] } },
      });
      expect(config.resources.Resources.GrantsFunctionRole!.Type).toBe('AWS::IAM::Role');
    },
  );
});

describe('roles from the calls a function makes', () => {
  it('grants each action on the resource it applies to, and event sources what Lambda does with the role', () => {
    const grants = grantsOf(
      'w',
      { sendsTo: ['JobsQueue'] },
      ['dynamodb:GetItem', 'sqs:SendMessage', 'ses:SendEmail'],
      [{ sqs: { arn: getAtt('FanoutQueue.Arn') } }],
    );
    expect(grants.map((g) => `${g.action} ${g.resource}`)).toEqual([
      'logs:CreateLogStream !Sub arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/${self:service}-${sls:stage}-w:*',
      'logs:PutLogEvents !Sub arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/${self:service}-${sls:stage}-w:*',
      'xray:PutTraceSegments *',
      'xray:PutTelemetryRecords *',
      'dynamodb:GetItem !GetAtt Table.Arn',
      'sqs:SendMessage !GetAtt JobsQueue.Arn',
      'ses:SendEmail !Sub arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/*',
      'ses:SendEmail !Sub arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:configuration-set/${SesConfigurationSet}',
      'sqs:ReceiveMessage !GetAtt FanoutQueue.Arn',
      'sqs:DeleteMessage !GetAtt FanoutQueue.Arn',
      'sqs:ChangeMessageVisibility !GetAtt FanoutQueue.Arn',
      'sqs:GetQueueAttributes !GetAtt FanoutQueue.Arn',
    ]);
  });

  it('refuses calls whose resource the function table does not give, and declarations the code does not use', () => {
    expect(() => grantsOf('w', {}, ['s3:GetObject'], [])).toThrow(/calls S3/);
    expect(() => grantsOf('w', {}, ['sqs:SendMessage'], [])).toThrow(/to which queues/);
    expect(() => grantsOf('w', { sendsTo: ['JobsQueue'] }, [], [])).toThrow(/sends no SQS message/);
    expect(() => grantsOf('w', { mail: { 'grants/': ['s3:PutObject'] } }, ['s3:GetObject'], [])).toThrow(
      /not called by its code/,
    );
    expect(() =>
      grantsOf('w', { mail: { 'grants/': ['s3:GetObject'] } }, ['s3:GetObject', 's3:DeleteObject'], []),
    ).toThrow(/s3:DeleteObject is granted on no prefix/);
    expect(() => grantsOf('w', {}, ['kms:Decrypt'], [])).toThrow(/no resource known/);
  });
});
