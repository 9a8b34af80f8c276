import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { httpService, type RunningService } from './service';

/**
 * A Secrets Manager stand-in for the local stack: the few operations the project uses, in the AWS
 * JSON 1.1 protocol the SDK speaks (`POST /`, `X-Amz-Target: secretsmanager.<Operation>`), in this
 * process, listening on loopback only. Secrets live in memory, as long as the server.
 *
 *   CreateSecret     Name + SecretString → ARN, Name, VersionId (the local stack creates its secrets
 *                    through the SDK, as it would on LocalStack)
 *   GetSecretValue   SecretId (ARN or name) → ARN, Name, SecretString, VersionId, CreatedDate
 *   DeleteSecret     SecretId → ARN, Name, DeletionDate (immediately, whatever the recovery window)
 *
 * Anything else is answered `UnknownOperationException`. Signatures are not checked: like the other
 * emulators, it is reachable from this machine only.
 */
const TARGET_PREFIX = 'secretsmanager.';
const MAX_BODY = 1024 * 1024;
/** Secrets Manager's limit on a secret value. */
const MAX_SECRET = 65_536;

interface Secret {
  arn: string;
  name: string;
  value: string;
  versionId: string;
  created: number;
}

class ApiError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export interface SecretsLocalOptions {
  port: number;
  host?: string;
  region?: string;
  accountId?: string;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) return reject(new ApiError('InvalidRequestException', 'Request body too large', 413));
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(text);
}

function stringField(input: Record<string, unknown>, name: string, required = true): string | undefined {
  const value = input[name];
  if (value === undefined || value === null) {
    if (required) throw new ApiError('InvalidParameterException', `${name} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || value === '')
    throw new ApiError('InvalidParameterException', `${name} must be a non-empty string`);
  return value;
}

export async function startSecretsLocal(options: SecretsLocalOptions): Promise<RunningService> {
  const host = options.host ?? '127.0.0.1';
  const region = options.region ?? 'us-east-1';
  const accountId = options.accountId ?? '000000000000';
  const byName = new Map<string, Secret>();
  const byArn = new Map<string, Secret>();

  const find = (secretId: string): Secret => {
    const secret = byArn.get(secretId) ?? byName.get(secretId);
    if (!secret) throw new ApiError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return secret;
  };

  const operations: Record<string, (input: Record<string, unknown>) => unknown> = {
    CreateSecret(input) {
      const name = stringField(input, 'Name')!;
      const value = stringField(input, 'SecretString');
      if (value === undefined)
        throw new ApiError(
          'InvalidParameterException',
          'SecretString is required (binary secrets are not supported here)',
        );
      if (Buffer.byteLength(value) > MAX_SECRET)
        throw new ApiError('InvalidParameterException', `SecretString is longer than ${MAX_SECRET} characters`);
      if (byName.has(name))
        throw new ApiError(
          'ResourceExistsException',
          `The operation failed because the secret ${name} already exists.`,
        );
      // Like AWS: the name, a dash and six random characters.
      const suffix = randomBytes(6).toString('base64url').replace(/[-_]/g, 'x').slice(0, 6);
      const secret: Secret = {
        arn: `arn:aws:secretsmanager:${region}:${accountId}:secret:${name}-${suffix}`,
        name,
        value,
        versionId: stringField(input, 'ClientRequestToken', false) ?? randomUUID(),
        created: Date.now() / 1000,
      };
      byName.set(name, secret);
      byArn.set(secret.arn, secret);
      return { ARN: secret.arn, Name: secret.name, VersionId: secret.versionId };
    },
    GetSecretValue(input) {
      const secret = find(stringField(input, 'SecretId')!);
      const versionId = stringField(input, 'VersionId', false);
      const stage = stringField(input, 'VersionStage', false);
      if (
        (versionId !== undefined && versionId !== secret.versionId) ||
        (stage !== undefined && stage !== 'AWSCURRENT')
      ) {
        throw new ApiError(
          'ResourceNotFoundException',
          "Secrets Manager can't find the specified secret value for the given version.",
        );
      }
      return {
        ARN: secret.arn,
        Name: secret.name,
        SecretString: secret.value,
        VersionId: secret.versionId,
        VersionStages: ['AWSCURRENT'],
        CreatedDate: secret.created,
      };
    },
    DeleteSecret(input) {
      const secret = find(stringField(input, 'SecretId')!);
      byName.delete(secret.name);
      byArn.delete(secret.arn);
      return { ARN: secret.arn, Name: secret.name, DeletionDate: Date.now() / 1000 };
    },
  };

  const server = createServer((req, res) => {
    void (async () => {
      try {
        if (req.method !== 'POST' || (req.url ?? '/').split('?')[0] !== '/')
          throw new ApiError('UnknownOperationException', 'Only POST / is served', 404);
        const target = String(req.headers['x-amz-target'] ?? '');
        const name = target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : '';
        const body = await readBody(req);
        if (!Object.hasOwn(operations, name))
          throw new ApiError('UnknownOperationException', `Unknown operation ${target || '(no X-Amz-Target)'}`);
        const operation = operations[name]!;
        let input: unknown;
        try {
          input = body === '' ? {} : JSON.parse(body);
        } catch {
          throw new ApiError('SerializationException', 'The request body is not JSON');
        }
        if (typeof input !== 'object' || input === null || Array.isArray(input))
          throw new ApiError('SerializationException', 'The request body is not a JSON object');
        send(res, 200, operation(input as Record<string, unknown>));
      } catch (error) {
        if (res.headersSent) return res.destroy();
        if (error instanceof ApiError) send(res, error.status, { __type: error.type, message: error.message });
        else send(res, 500, { __type: 'InternalServiceError', message: 'Internal error' });
      }
    })();
  });
  return httpService(server, options.port, host);
}
