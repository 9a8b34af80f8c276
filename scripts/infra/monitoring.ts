import { Intrinsic, getAtt, ref, sub } from './cfn';
import { DEAD_LETTER_QUEUES, NOT_REDRIVABLE, type DeadLetterQueueName } from './dead-letter-queues';

/**
 * Alarms, their SNS topic and the dashboard, generated from the resources and the functions so that a
 * new function or dead-letter queue is watched without anyone remembering: every dead-letter queue
 * (each RedrivePolicy target and each SQS on-failure destination) gets a depth alarm, every function an
 * Errors alarm, and the metrics our code emits (shared/metrics.ts: Powertools Metrics, EMF, namespace
 * `Switchboard`, dimension `service`) their alarms and graphs. Every alarm notifies AlarmTopic, which
 * mails the `alarmEmail` stage parameter when one is given
 * (`serverless deploy --param="alarmEmail=ops@example.com"`).
 *
 * Budget: CloudFormation takes 500 resources per stack and the functions, their versions, log groups,
 * roles and routes already take most of them. Errors alarms are one per function (the one that fails is
 * the first thing to know); Throttles alarms are metric math over groups of functions (a throttle is an
 * account-level concurrency problem, whichever function shows it; the dashboard graphs each function).
 */
export const METRICS_NAMESPACE = 'Switchboard';
export const SERVICE = 'switchboard';
/** The providers whose metrics carry a `provider` dimension (shared/metrics.ts). */
export const PROVIDERS = ['google', 'microsoft'] as const;
/** Alarm math may read at most 10 metrics. */
const METRICS_PER_ALARM = 10;
const PERIOD = 300;

const STACK = '${self:service}-${sls:stage}';
/** Serverless names each function `<service>-<stage>-<function>`. */
const functionName = (fn: string) => `${STACK}-${fn}`;
const pascal = (name: string) => name.replace(/(^|-)([a-z])/g, (_, __, c: string) => c.toUpperCase());
const SERVICE_DIMENSION = { Name: 'service', Value: SERVICE };
const NOTIFY = { AlarmActions: [ref('AlarmTopic')], OKActions: [ref('AlarmTopic')] };

/** What the generator knows of a function: its events and its async failure destination. */
interface FunctionConfig {
  events?: Record<string, unknown>[];
  destinations?: unknown;
}

const logicalIdOf = (arn: unknown) =>
  arn instanceof Intrinsic && arn.name === 'GetAtt' ? arn.value.split('.')[0] : undefined;

/** The dead-letter queues: every queue a RedrivePolicy targets and every SQS on-failure destination, in template order. */
export function deadLetterQueues(resources: Record<string, unknown>, functions: Record<string, FunctionConfig>) {
  const found = new Set<string>();
  for (const resource of Object.values(resources)) {
    const { Type, Properties } = resource as {
      Type: string;
      Properties?: { RedrivePolicy?: { deadLetterTargetArn: unknown } };
    };
    const target = Type === 'AWS::SQS::Queue' ? logicalIdOf(Properties?.RedrivePolicy?.deadLetterTargetArn) : undefined;
    if (target) found.add(target);
  }
  const onFailure = (destinations: unknown) => {
    const target = (destinations as { onFailure?: { type?: string; arn?: unknown } } | undefined)?.onFailure;
    const id = target?.type === 'sqs' ? logicalIdOf(target.arn) : undefined;
    if (id) found.add(id);
  };
  for (const fn of Object.values(functions)) {
    onFailure(fn.destinations);
    for (const event of fn.events ?? [])
      if ('stream' in event) onFailure((event.stream as { destinations?: unknown }).destinations);
  }
  return Object.keys(resources).filter((id) => found.has(id));
}

const isHttp = (fn: FunctionConfig) => (fn.events ?? []).some((event) => 'httpApi' in event);

/** A CloudWatch alarm notifying the topic on ALARM and on OK. */
function alarm(name: string | Intrinsic, description: string, properties: Record<string, unknown>) {
  return {
    Type: 'AWS::CloudWatch::Alarm',
    Properties: {
      AlarmName: name,
      AlarmDescription: description,
      ...properties,
      TreatMissingData: 'notBreaching',
      ...NOTIFY,
    },
  };
}

/** What the operator does about a dead-letter queue's messages (the README's runbook says more). */
const redriveHint = (queue: string) => {
  const name = Object.entries(DEAD_LETTER_QUEUES).find(([, id]) => id === queue)?.[0] as
    DeadLetterQueueName | undefined;
  if (!name) return '';
  if (NOT_REDRIVABLE[name]) return " It holds Lambda's failure records, not messages to move back: see the runbook.";
  return ` Once the cause is fixed: npm run admin -- redrive ${name} --stage \${sls:stage}`;
};

function alarms(resources: Record<string, unknown>, functions: Record<string, FunctionConfig>) {
  const out: Record<string, unknown> = {};
  // A message in a dead-letter queue is work that failed for good: any one of them is worth a look.
  for (const queue of deadLetterQueues(resources, functions))
    out[`${queue}DepthAlarm`] = alarm(
      sub(`\${${queue}.QueueName}-depth`),
      `Messages wait in this dead-letter queue.${redriveHint(queue)}`,
      {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: getAtt(`${queue}.QueueName`) }],
        Statistic: 'Maximum',
        Period: PERIOD,
        EvaluationPeriods: 1,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      },
    );
  // Errors. An HTTP function answers its handlers' failures itself (a 500 envelope, not a Lambda
  // error), so its Lambda errors are timeouts and crashes: one can be a slow provider call, three in
  // 5 minutes are not chance. Any other function (queue, stream, schedule, SES) reports per-message
  // failures in its answer, so one Lambda error is a crash or a timeout that fails the whole batch: > 0.
  for (const [name, fn] of Object.entries(functions)) {
    const http = isHttp(fn);
    out[`${pascal(name)}ErrorsAlarm`] = alarm(
      `${functionName(name)}-errors`,
      http
        ? `The ${name} function timed out or crashed 3 times or more in 5 minutes (its handled failures are 500 answers, not Lambda errors).`
        : `The ${name} function failed an invocation (a crash or a timeout, not one message's failure): see its logs.`,
      {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: functionName(name) }],
        Statistic: 'Sum',
        Period: PERIOD,
        EvaluationPeriods: 1,
        Threshold: http ? 3 : 0,
        ComparisonOperator: http ? 'GreaterThanOrEqualToThreshold' : 'GreaterThanThreshold',
      },
    );
  }
  // Throttles: any at all, summed over groups of at most 10 functions (the alarm math limit).
  const names = Object.keys(functions);
  const groups = Math.ceil(names.length / METRICS_PER_ALARM);
  for (let g = 0; g < groups; g++) {
    const group = names.filter((_, i) => i % groups === g);
    out[`Throttles${g + 1}Alarm`] = alarm(
      `${STACK}-throttles-${g + 1}`,
      `Lambda throttled invocations of ${group.join(', ')} (account or function concurrency reached).`,
      {
        Metrics: [
          ...group.map((fn, i) => ({
            Id: `f${i}`,
            MetricStat: {
              Metric: {
                Namespace: 'AWS/Lambda',
                MetricName: 'Throttles',
                Dimensions: [{ Name: 'FunctionName', Value: functionName(fn) }],
              },
              Period: PERIOD,
              Stat: 'Sum',
            },
            ReturnData: false,
          })),
          { Id: 'throttles', Expression: 'SUM(METRICS())', Label: 'Throttles', ReturnData: true },
        ],
        EvaluationPeriods: 1,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      },
    );
  }
  const custom = (metric: string, dimensions: { Name: string; Value: string }[] = []) => ({
    Namespace: METRICS_NAMESPACE,
    MetricName: metric,
    Dimensions: [SERVICE_DIMENSION, ...dimensions],
  });
  out.ScheduledSendLatenessAlarm = alarm(
    `${STACK}-scheduled-send-late`,
    'A scheduled send left more than a minute after its send_at.',
    {
      ...custom('ScheduledSendLateness'),
      Statistic: 'Maximum',
      Period: PERIOD,
      EvaluationPeriods: 1,
      Threshold: 60_000,
      ComparisonOperator: 'GreaterThanThreshold',
    },
  );
  // A lapsed push is renewed by the next sync run: only one lapsing for 45 minutes is stuck.
  for (const provider of PROVIDERS)
    out[`PushLapsed${pascal(provider)}Alarm`] = alarm(
      `${STACK}-push-lapsed-${provider}`,
      `Grants of ${provider} have had no working push (watch, channel or subscription lapsed or refused) for 45 minutes.`,
      {
        ...custom('PushLapsed', [{ Name: 'provider', Value: provider }]),
        Statistic: 'Sum',
        Period: 900,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      },
    );
  out.DeliveryDeadLetteredAlarm = alarm(
    `${STACK}-delivery-dead-lettered`,
    `A webhook delivery failed its last attempt.${redriveHint('DeliveryDeadLetterQueue')}`,
    {
      ...custom('DeliveryDeadLettered'),
      Statistic: 'Sum',
      Period: PERIOD,
      EvaluationPeriods: 1,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    },
  );
  return out;
}

/** A graph of the dashboard. `metrics` as CloudWatch's dashboard body takes them. */
const graph = (title: string, metrics: unknown[], properties: Record<string, unknown> = {}) => ({
  type: 'metric',
  width: 12,
  height: 6,
  properties: {
    title,
    region: '${AWS::Region}',
    view: 'timeSeries',
    period: PERIOD,
    stat: 'Sum',
    metrics,
    ...properties,
  },
});

/**
 * Every series of a metric whose dimensions are `service` and `dimension`: new routes and providers
 * appear by themselves. (A graph's expression is an array holding one object.)
 */
const search = (metric: string, dimension: string, stat: string, id: string, period = PERIOD) => [
  {
    id,
    expression: `SEARCH('{${METRICS_NAMESPACE},${dimension},service} MetricName="${metric}" service="${SERVICE}"', '${stat}', ${period})`,
  },
];

const ours = (metric: string, options: Record<string, unknown> = {}) => [
  METRICS_NAMESPACE,
  metric,
  'service',
  SERVICE,
  { label: metric, ...options },
];

function dashboard(
  resources: Record<string, unknown>,
  functions: Record<string, FunctionConfig>,
  alarmIds: string[],
): Record<string, unknown> {
  const names = Object.keys(functions);
  const perFunction = (metric: string, stat: string) =>
    names.map((fn) => ['AWS/Lambda', metric, 'FunctionName', functionName(fn), { label: fn, stat }]);
  const widgets = [
    {
      type: 'alarm',
      width: 24,
      height: 4,
      properties: { title: 'Alarms', alarms: alarmIds.map((id) => `\${${id}.Arn}`), sortBy: 'stateUpdatedTimestamp' },
    },
    graph('API requests by route', [search('Requests', 'route', 'Sum', 'requests')]),
    graph('API 5xx by route', [search('ServerErrors', 'route', 'Sum', 'errors')]),
    graph('API latency p99 by route (ms)', [search('Latency', 'route', 'p99', 'latency')]),
    graph('Rate-limited requests', [ours('RateLimited')]),
    graph('Lambda errors', perFunction('Errors', 'Sum')),
    graph('Lambda throttles', perFunction('Throttles', 'Sum')),
    graph('Lambda duration p99 (ms)', perFunction('Duration', 'p99')),
    graph(
      'Dead-letter queue depth',
      deadLetterQueues(resources, functions).map((queue) => [
        'AWS/SQS',
        'ApproximateNumberOfMessagesVisible',
        'QueueName',
        `\${${queue}.QueueName}`,
        { label: Object.entries(DEAD_LETTER_QUEUES).find(([, id]) => id === queue)?.[0] ?? queue },
      ]),
      { stat: 'Maximum' },
    ),
    graph('Webhook deliveries', [ours('Deliveries'), ours('DeliveryRetries'), ours('DeliveryDeadLettered')]),
    graph('Sync runs, pushes and cursor resets by provider', [
      search('SyncRuns', 'provider', 'Sum', 'runs'),
      search('PushArrivals', 'provider', 'Sum', 'pushes'),
      search('CursorResets', 'provider', 'Sum', 'resets'),
    ]),
    graph('Grants with a lapsed push by provider (15 min)', [search('PushLapsed', 'provider', 'Sum', 'lapsed', 900)], {
      period: 900,
    }),
    graph(
      'Scheduled send lateness (ms)',
      [
        ours('ScheduledSendLateness', { stat: 'Maximum', label: 'maximum' }),
        ours('ScheduledSendLateness', { stat: 'p99', label: 'p99' }),
      ],
      {
        annotations: { horizontal: [{ label: 'alarm', value: 60_000 }] },
      },
    ),
  ];
  // Two graphs a row under the alarms. One widget a line: serverless.yml stays readable and diffs by widget.
  let y = 0;
  let x = 0;
  const placed = widgets.map((widget) => {
    if (x + widget.width > 24) {
      x = 0;
      y += 6;
    }
    const at = { ...widget, x, y };
    x += widget.width;
    if (widget.width === 24) {
      x = 0;
      y += widget.height;
    }
    return at;
  });
  return {
    Type: 'AWS::CloudWatch::Dashboard',
    Properties: {
      DashboardName: STACK,
      // Fn::Sub fills in the region, the queues' names and the alarms' ARNs.
      DashboardBody: sub(`{"widgets":[\n${placed.map((w) => JSON.stringify(w)).join(',\n')}\n]}`),
    },
  };
}

/** The template's monitoring: a parameter, a condition and the resources (topic, its key, alarms, dashboard). */
export function monitoring(resources: Record<string, unknown>, functions: Record<string, FunctionConfig>) {
  const generated = alarms(resources, functions);
  return {
    Parameters: {
      AlarmEmail: {
        Type: 'String',
        Default: "${param:alarmEmail, ''}",
        Description: 'Where alarm notifications are mailed (empty: no subscription); SNS asks the address to confirm.',
      },
    },
    Conditions: { HasAlarmEmail: { 'Fn::Not': [{ 'Fn::Equals': [ref('AlarmEmail'), ''] }] } },
    Resources: {
      // CloudWatch cannot publish to a topic under the AWS managed key alias/aws/sns (its policy cannot
      // let cloudwatch.amazonaws.com use it), so the topic has a key of its own that does.
      AlarmTopicKey: {
        Type: 'AWS::KMS::Key',
        Properties: {
          Description: '${self:service}-${sls:stage} alarm topic',
          EnableKeyRotation: true,
          KeyPolicy: {
            Version: '2012-10-17',
            Statement: [
              {
                Sid: 'AccountAdministers',
                Effect: 'Allow',
                Principal: { AWS: sub('arn:${AWS::Partition}:iam::${AWS::AccountId}:root') },
                Action: 'kms:*',
                Resource: '*',
              },
              {
                Sid: 'CloudWatchAlarmsPublish',
                Effect: 'Allow',
                Principal: { Service: 'cloudwatch.amazonaws.com' },
                Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
                Resource: '*',
              },
            ],
          },
        },
      },
      AlarmTopic: {
        Type: 'AWS::SNS::Topic',
        Properties: { TopicName: `${STACK}-alarms`, KmsMasterKeyId: getAtt('AlarmTopicKey.Arn') },
      },
      AlarmEmailSubscription: {
        Type: 'AWS::SNS::Subscription',
        Condition: 'HasAlarmEmail',
        Properties: { TopicArn: ref('AlarmTopic'), Protocol: 'email', Endpoint: ref('AlarmEmail') },
      },
      ...generated,
      Dashboard: dashboard(resources, functions, Object.keys(generated)),
    },
  };
}
