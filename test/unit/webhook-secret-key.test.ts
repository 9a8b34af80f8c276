import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import {
  CreateSecretCommand,
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunningService } from '../../scripts/local-stack/service';
import { startSecretsLocal } from '../../scripts/local-stack/secrets-local';

/**
 * The key that encrypts webhook secrets comes from Secrets Manager (WEBHOOK_SECRET_KEY_ARN names the
 * secret), read once per container and cached. Each test imports the module fresh, as a cold start
 * does; Secrets Manager is mocked.
 */
const secretsMock = mockClient(SecretsManagerClient);
const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:switchboard-test-webhook-key-AbCdEf';
const MATERIAL = randomBytes(48).toString('base64');
const DERIVED = createHash('sha256').update(MATERIAL, 'utf8').digest();

let previousArn: string | undefined;

/** A new container: the module loaded again, with nothing cached. */
async function coldStart() {
  vi.resetModules();
  return import('#shared/webhooks/secrets');
}

/** Everything written to stdout, stderr and the console while `fn` runs. */
async function captureOutput(fn: () => Promise<void>): Promise<string> {
  let output = '';
  const collect = (...args: unknown[]) => {
    output +=
      args
        .map((a) =>
          typeof a === 'string' ? a : a instanceof Uint8Array ? Buffer.from(a).toString() : JSON.stringify(a),
        )
        .join(' ') + '\n';
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(collect as typeof process.stdout.write),
    vi.spyOn(process.stderr, 'write').mockImplementation(collect as typeof process.stderr.write),
    ...(['log', 'info', 'warn', 'error', 'debug'] as const).map((level) =>
      vi.spyOn(console, level).mockImplementation(collect),
    ),
  ];
  try {
    await fn();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return output;
}

/** A promise resolved when `release` is called: a GetSecretValue still in flight, or the signal that one was made. */
function deferred<T>() {
  let release!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (release = resolve));
  return { promise, release };
}

describe('webhook secret key', () => {
  beforeEach(() => {
    secretsMock.reset();
    previousArn = process.env.WEBHOOK_SECRET_KEY_ARN;
    process.env.WEBHOOK_SECRET_KEY_ARN = ARN;
  });
  afterEach(() => {
    if (previousArn === undefined) delete process.env.WEBHOOK_SECRET_KEY_ARN;
    else process.env.WEBHOOK_SECRET_KEY_ARN = previousArn;
  });

  it('reads the secret once per container, for any number of encryptions and decryptions', async () => {
    // Prepare
    secretsMock
      .on(GetSecretValueCommand)
      .resolves({ ARN, Name: 'switchboard-test-webhook-key', SecretString: MATERIAL });
    const { decryptSecret, encryptSecret, generateWebhookSecret } = await coldStart();
    const secrets = Array.from({ length: 25 }, () => generateWebhookSecret());

    // Act
    const stored = [];
    for (const secret of secrets) stored.push(await encryptSecret(secret));
    const decrypted = await Promise.all(stored.map((s) => decryptSecret(s)));

    // Assess
    expect(decrypted).toEqual(secrets);
    const calls = secretsMock.commandCalls(GetSecretValueCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.args[0].input).toEqual({ SecretId: ARN });
  });

  it('derives the same key as before (SHA-256 of the material): secrets stored earlier still decrypt', async () => {
    // Prepare: a secret encrypted the way the previous release did, from the same material.
    secretsMock.on(GetSecretValueCommand).resolves({ SecretString: MATERIAL });
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', DERIVED, iv);
    const data = Buffer.concat([cipher.update('older-secret', 'utf8'), cipher.final()]);
    const stored = [
      'v1',
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      data.toString('base64url'),
    ].join(':');
    const { decryptSecret, webhookKey } = await coldStart();

    // Act + Assess
    expect(await decryptSecret(stored)).toBe('older-secret');
    expect((await webhookKey()).equals(DERIVED)).toBe(true);
  });

  it('makes concurrent first calls share one GetSecretValue', async () => {
    // Prepare
    const pending = deferred<{ SecretString: string }>();
    const asked = deferred<void>();
    secretsMock.on(GetSecretValueCommand).callsFake(() => {
      asked.release();
      return pending.promise;
    });
    const { decryptSecret, encryptSecret } = await coldStart();

    // Act: twenty requests arrive before the secret does.
    const encrypting = Array.from({ length: 20 }, (_, i) => encryptSecret(`secret-${i}`));
    await asked.promise;
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    pending.release({ SecretString: MATERIAL });
    const stored = await Promise.all(encrypting);

    // Assess
    expect(await Promise.all(stored.map((s) => decryptSecret(s)))).toEqual(
      Array.from({ length: 20 }, (_, i) => `secret-${i}`),
    );
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(1);
  });

  it('forgets a failed read: the next call tries again, and a success is then cached', async () => {
    // Prepare
    secretsMock
      .on(GetSecretValueCommand)
      .rejectsOnce(
        new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: {} }),
      )
      .resolves({ SecretString: MATERIAL });
    const { decryptSecret, encryptSecret } = await coldStart();

    // Act + Assess: concurrent calls during the failed read all fail with it.
    const failed = await Promise.allSettled([encryptSecret('a'), encryptSecret('b')]);
    for (const result of failed) {
      expect(result.status).toBe('rejected');
      expect(String((result as PromiseRejectedResult).reason.message)).toBe(
        `Cannot read the secret key ${ARN} from Secrets Manager: Secrets Manager can't find the specified secret.`,
      );
    }
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(1);

    const stored = await encryptSecret('c');
    expect(await decryptSecret(stored)).toBe('c');
    await encryptSecret('d');
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('refuses material shorter than 32 characters with a clear error, and reads the secret again next time', async () => {
    // Prepare
    const short = 'x'.repeat(31);
    secretsMock.on(GetSecretValueCommand).resolvesOnce({ SecretString: short }).resolves({ SecretString: MATERIAL });
    const { encryptSecret } = await coldStart();

    // Act + Assess
    const error = await encryptSecret('a').then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toBe(`The secret key ${ARN} must be at least 32 characters of random material`);
    expect(error?.message).not.toContain(short);
    // Fixed in Secrets Manager: the next invocation picks it up without a new container.
    await expect(encryptSecret('a')).resolves.toMatch(/^v1:/);
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('refuses a secret without a string value', async () => {
    secretsMock.on(GetSecretValueCommand).resolves({ SecretBinary: new Uint8Array(48) });
    const { encryptSecret } = await coldStart();
    await expect(encryptSecret('a')).rejects.toThrow(`Secret ${ARN} has no string value`);
  });

  it('needs WEBHOOK_SECRET_KEY_ARN at cold start, and never the material in the environment', async () => {
    delete process.env.WEBHOOK_SECRET_KEY_ARN;
    await expect(coldStart()).rejects.toThrow('Missing required environment variable WEBHOOK_SECRET_KEY_ARN');
    expect(secretsMock.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });

  it('never writes the key material or the derived key to the output, even when the logger reports its errors', async () => {
    // Prepare: the logger at its most talkative, loaded fresh like the functions' own.
    const previousLevel = process.env.LOG_LEVEL;
    process.env.LOG_LEVEL = 'debug';
    const short = `short-${randomBytes(8).toString('hex')}`;
    secretsMock
      .on(GetSecretValueCommand)
      .rejectsOnce(new Error('throttled'))
      .resolvesOnce({ SecretString: short })
      .resolves({ SecretString: MATERIAL });
    try {
      const { decryptSecret, encryptSecret } = await coldStart();
      const { logger } = await import('#shared/logger');

      // Act: every path, each error logged as the delivery worker logs its own.
      const output = await captureOutput(async () => {
        for (let i = 0; i < 3; i++) {
          try {
            const stored = await encryptSecret('a-webhook-secret');
            logger.info('encrypted', { stored_length: stored.length });
            await decryptSecret(stored);
            await decryptSecret(stored.replace(/^v1:./, 'v1:A'));
          } catch (error) {
            logger.error('webhook secret failed', { error, cause: (error as Error).cause });
          }
        }
      });

      // Assess
      expect(output).toContain('webhook secret failed');
      for (const leaked of [
        MATERIAL,
        short,
        DERIVED.toString('hex'),
        DERIVED.toString('base64'),
        DERIVED.toString('base64url'),
      ]) {
        expect(output).not.toContain(leaked);
      }
    } finally {
      if (previousLevel === undefined) delete process.env.LOG_LEVEL;
      else process.env.LOG_LEVEL = previousLevel;
    }
  });
});

/** The local stack's Secrets Manager stand-in, with the real SDK client the functions use. */
describe('local Secrets Manager (scripts/local-stack/secrets-local.ts)', () => {
  let service: RunningService;
  let client: SecretsManagerClient;
  const call = (target: string, body: unknown) =>
    fetch(service.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    secretsMock.restore();
    service = await startSecretsLocal({ port: 0 });
    client = new SecretsManagerClient({
      endpoint: service.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });
  afterAll(async () => {
    client?.destroy();
    await service?.stop();
  });

  it('listens on loopback', () => {
    expect(new URL(service.endpoint).hostname).toBe('127.0.0.1');
  });

  it('creates a secret and answers GetSecretValue by ARN or name', async () => {
    const created = await client.send(
      new CreateSecretCommand({ Name: 'switchboard-local-webhook-key', SecretString: MATERIAL }),
    );
    expect(created.ARN).toMatch(
      /^arn:aws:secretsmanager:us-east-1:\d{12}:secret:switchboard-local-webhook-key-[A-Za-z0-9]{6}$/,
    );
    for (const id of [created.ARN!, 'switchboard-local-webhook-key']) {
      const value = await client.send(new GetSecretValueCommand({ SecretId: id }));
      expect(value).toMatchObject({
        ARN: created.ARN,
        Name: 'switchboard-local-webhook-key',
        SecretString: MATERIAL,
        VersionId: created.VersionId,
      });
      expect(value.CreatedDate).toBeInstanceOf(Date);
    }
    const raw = await call('secretsmanager.GetSecretValue', { SecretId: created.ARN });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toBe('application/x-amz-json-1.1');
    expect(Object.keys((await raw.json()) as object).sort()).toEqual(
      expect.arrayContaining(['ARN', 'CreatedDate', 'Name', 'SecretString', 'VersionId']),
    );
  });

  it('answers an unknown secret with ResourceNotFoundException, and other operations with UnknownOperationException', async () => {
    await expect(client.send(new GetSecretValueCommand({ SecretId: 'no-such-secret' }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
    const missing = await call('secretsmanager.GetSecretValue', { SecretId: 'no-such-secret' });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ __type: 'ResourceNotFoundException', message: expect.any(String) });
    for (const target of ['secretsmanager.ListSecrets', 'secretsmanager.toString', 'dynamodb.GetItem', '']) {
      const unknown = await call(target, {});
      expect(unknown.status, target).toBe(400);
      expect(((await unknown.json()) as { __type: string }).__type, target).toBe('UnknownOperationException');
    }
  });
});
