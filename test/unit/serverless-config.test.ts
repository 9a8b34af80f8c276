import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_ROUTES } from '#functions/routes';
import { buildOpenApi } from '#schemas/openapi';
import { ROOT, httpApiEvents, loadServerlessConfig } from '../../scripts/local-stack/serverless-config';

const config = loadServerlessConfig();
const resources = config.resources.Resources;

/**
 * The functions that seal or open secrets: webhook secrets, connector secrets, provider tokens and
 * the passwords of IMAP grants (the mail functions and mail-sync reach their IMAP servers with them;
 * calendars, events, contacts, availability and scheduling their CalDAV and CardDAV servers).
 */
const SECRET_HOLDERS = [
  'attachments',
  'availability',
  'calendars',
  'connect',
  'connectors',
  'contacts',
  'domains',
  'domains-send',
  'drafts',
  'drafts-send',
  'events',
  'folders',
  'jobs',
  'mail-sync',
  'messages',
  'resources',
  'scheduled-send',
  'scheduling',
  'send',
  'threads',
  'tracking',
  'webhook-delivery',
  'webhooks',
];

describe('serverless.yml', () => {
  it("declares exactly the routes of each function's route table", () => {
    const declared = httpApiEvents(config)
      .filter((e) => e.method !== '*')
      .map((e) => `${e.function} ${e.method} ${e.path}`)
      .sort();
    const tables = Object.entries(API_ROUTES)
      .flatMap(([group, routes]) => Object.values(routes).map((r) => `${group} ${r.method} ${r.path}`))
      .sort();
    expect(declared).toEqual(tables);
  });

  it('sends every other request to the $default fallback function', () => {
    expect(
      httpApiEvents(config)
        .filter((e) => e.method === '*')
        .map((e) => e.function),
    ).toEqual(['fallback']);
  });

  it('points every handler at an existing module', () => {
    for (const fn of Object.values(config.functions)) {
      expect(existsSync(join(ROOT, `${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.ts`)), fn.handler).toBe(true);
    }
  });

  it('gives every function its own role with no wildcard permissions', () => {
    const roles = Object.values(config.functions).map((fn) => fn.role);
    expect(new Set(roles).size).toBe(roles.length);
    for (const role of roles) {
      expect(resources[role!]?.Type).toBe('AWS::IAM::Role');
      const statements = (
        resources[role!]!.Properties!.Policies as {
          PolicyDocument: { Statement: { Action: string[]; Resource: unknown }[] };
        }[]
      ).flatMap((p) => p.PolicyDocument.Statement);
      for (const statement of statements) {
        expect(
          statement.Action.some((a) => a.includes('*')),
          `${role}: ${statement.Action}`,
        ).toBe(false);
        // X-Ray's write actions are the one exception: X-Ray has no resource-level permissions.
        const xray = statement.Action.every((a) => a === 'xray:PutTraceSegments' || a === 'xray:PutTelemetryRecords');
        if (!xray) expect(statement.Resource).not.toBe('*');
      }
    }
  });

  describe('webhook secret key', () => {
    const params = (config as unknown as { params: Record<string, Record<string, unknown>> }).params;
    const environments = [
      ['provider', (config.provider.environment ?? {}) as Record<string, unknown>],
      ...Object.entries(config.functions).map(([name, fn]) => [
        name,
        (fn.environment ?? {}) as Record<string, unknown>,
      ]),
    ] as [string, Record<string, unknown>][];
    const secretStatements = (role: string) =>
      (
        resources[role]!.Properties!.Policies as {
          PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown }[] };
        }[]
      )
        .flatMap((p) => p.PolicyDocument.Statement)
        .filter((s) => [s.Action].flat().some((a) => a.startsWith('secretsmanager:')));

    it('is a generated Secrets Manager secret', () => {
      const secret = resources.WebhookSecretKey!;
      expect(secret.Type).toBe('AWS::SecretsManager::Secret');
      expect(secret.Properties!.SecretString).toBeUndefined();
      expect(secret.Properties!.GenerateSecretString).toMatchObject({ PasswordLength: 64, ExcludePunctuation: true });
    });

    it('never puts the key material in an environment variable', () => {
      for (const [name, environment] of environments) {
        expect(environment.WEBHOOK_SECRET_KEY, name).toBeUndefined();
        // Neither resolved into one by CloudFormation ({{resolve:secretsmanager:...}}) nor through a parameter.
        expect(JSON.stringify(environment), name).not.toMatch(
          /resolve:secretsmanager|webhookSecretKey\b|"Fn::GetAtt":\["WebhookSecretKey"/,
        );
      }
      expect(JSON.stringify(params)).not.toMatch(/resolve:secretsmanager/);
      expect(Object.values(params).map((stage) => stage.webhookSecretKey)).toEqual(
        Object.values(params).map(() => undefined),
      );
    });

    it('gives its ARN only to the functions that seal or open secrets (webhook secrets, connector secrets, provider tokens, IMAP passwords)', () => {
      const holders = environments
        .filter(([, environment]) => environment.WEBHOOK_SECRET_KEY_ARN !== undefined)
        .map(([name]) => name);
      expect(holders.sort()).toEqual(SECRET_HOLDERS);
      for (const name of holders)
        expect(config.functions[name]!.environment!.WEBHOOK_SECRET_KEY_ARN).toBe('${param:webhookSecretKeyArn}');
      // Deployed: the Ref of an AWS::SecretsManager::Secret is its ARN. Local: the local stack's secret.
      expect(params.default!.webhookSecretKeyArn).toEqual({ Ref: 'WebhookSecretKey' });
      expect(params.local!.webhookSecretKeyArn).toBe("${env:WEBHOOK_SECRET_KEY_ARN, ''}");
    });

    it('lets exactly those functions read exactly that secret, and no role anything else in Secrets Manager', () => {
      const readers = Object.entries(config.functions)
        .filter(([, fn]) => secretStatements(fn.role!).length > 0)
        .map(([name]) => name);
      expect(readers.sort()).toEqual(SECRET_HOLDERS);
      for (const name of readers) {
        expect(secretStatements(config.functions[name]!.role!)).toEqual([
          { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: { Ref: 'WebhookSecretKey' } },
        ]);
      }
      // Roles no function uses hold none either.
      const roles = Object.entries(resources)
        .filter(([, r]) => r.Type === 'AWS::IAM::Role')
        .map(([id]) => id);
      const withSecrets = roles.filter((role) => secretStatements(role).length > 0);
      expect(withSecrets.sort()).toEqual(readers.map((name) => config.functions[name]!.role!).sort());
    });
  });

  it('gives every work queue a dead-letter queue after 3 receives', () => {
    const queues = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::SQS::Queue');
    const dlqs = new Set<string>();
    for (const [, queue] of queues) {
      const redrive = queue.Properties!.RedrivePolicy as
        { deadLetterTargetArn: { 'Fn::GetAtt': string[] }; maxReceiveCount: number } | undefined;
      if (!redrive) continue;
      expect(redrive.maxReceiveCount).toBe(3);
      dlqs.add(redrive.deadLetterTargetArn['Fn::GetAtt'][0]!);
    }
    for (const [id] of queues) {
      // Dead-letter queues end in DeadLetterQueue: the redrive targets, and Lambda's on-failure destinations.
      if (!dlqs.has(id) && !id.endsWith('DeadLetterQueue'))
        expect(resources[id]!.Properties!.RedrivePolicy, `${id} has no DLQ`).toBeDefined();
    }
    expect(dlqs.size).toBeGreaterThanOrEqual(2);
  });

  it('declares the single table with pk/sk and TTL', () => {
    const table = Object.values(resources).find((r) => r.Type === 'AWS::DynamoDB::Table')!;
    expect(table.Properties!.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(table.Properties!.TimeToLiveSpecification).toEqual({ AttributeName: 'expires_at', Enabled: true });
  });
});

describe('OpenAPI document', () => {
  it('describes every route with its schemas', () => {
    const doc = buildOpenApi(API_ROUTES);
    for (const routes of Object.values(API_ROUTES)) {
      for (const [name, route] of Object.entries(routes)) {
        const operation = (doc.paths[route.path] as Record<string, { operationId: string; requestBody?: unknown }>)[
          route.method.toLowerCase()
        ];
        expect(operation?.operationId).toBe(name);
        expect(Boolean(operation?.requestBody)).toBe('body' in route);
      }
    }
  });
});
