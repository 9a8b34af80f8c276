import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { apiTokenKey } from '#shared/db/keys';
import { tokenHash } from '#shared/accounts/issued-tokens';
import { clock } from '#shared/time';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { useApi } from '../support/harness';

/**
 * Access tokens (`Authorization: Bearer <access token>`): an access token opens its own grant's
 * endpoints and `me`, nothing else of the application; another grant is a 404; a revoked token a 401.
 * Tokens here come from the token endpoint's client_credentials grant (the API key asking for one
 * grant); the hosted OAuth flow issues the same tokens (test/integration/hosted-oauth.test.ts).
 */
const { gateway } = useApi();
const anonymous = (): ApiClient => apiClient(gateway().url);

describe('access tokens', () => {
  it('open their own grant (by ID, address or me), and nothing else', async () => {
    const { applicationId, apiKey: secret } = await makeApplication('tokens');
    const owner = apiClient(gateway().url, secret);
    const ava = await makeAgentGrant(owner);
    const bo = await makeAgentGrant(owner);
    const response = await anonymous().post('/v3/connect/token', {
      grant_type: 'client_credentials',
      client_id: applicationId,
      client_secret: secret,
      grant_id: ava.id,
    });
    expect(response.status, response.text).toBe(200);
    const token = response.body as {
      access_token: string;
      token_type: string;
      expires_in: number;
      grant_id: string;
      email: string;
      provider: string;
      id_token: string;
    };
    expect(token).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      grant_id: ava.id,
      email: ava.email,
      provider: 'nylas',
    });
    expect(token.access_token).toMatch(/^sbat_/);
    // Only its hash is stored.
    const stored = await dynamo.send(
      new GetCommand({ TableName: TABLE_NAME, Key: apiTokenKey(tokenHash(token.access_token)) }),
    );
    expect(stored.Item).toBeDefined();
    expect(JSON.stringify(stored.Item)).not.toContain(token.access_token);

    const asAva = apiClient(gateway().url, token.access_token);
    const me = await asAva.get('/v3/grants/me');
    expect(me.status, me.text).toBe(200);
    expect(me.body.data.id).toBe(ava.id);
    expect((await asAva.get(`/v3/grants/${ava.id}`)).body.data.email).toBe(ava.email);
    expect((await asAva.get(`/v3/grants/${encodeURIComponent(ava.email)}/folders`)).status).toBe(200);
    expect((await asAva.get('/v3/grants/me/messages')).status).toBe(200);
    // Another grant of the same application is as unknown as another application's.
    const other = await asAva.get(`/v3/grants/${bo.id}`);
    expect(other.status).toBe(404);
    expect(other.body.error.type).toBe('not_found_error');
    expect((await asAva.get(`/v3/grants/${bo.id}/messages`)).status).toBe(404);
    // Application-level endpoints need the API key.
    for (const path of ['/v3/grants', '/v3/webhooks', '/v3/lists']) {
      const refused = await asAva.get(path);
      expect(refused.status, path).toBe(401);
      expect(refused.body.error.message).toContain('API key');
    }
    // `me` with the API key: 400 saying why.
    const withKey = await owner.get('/v3/grants/me');
    expect(withKey.status).toBe(400);
    expect(withKey.body.error.message).toContain('access token');

    // The token says what it is; revoked, it opens nothing.
    const info = await anonymous().get(`/v3/connect/tokeninfo?access_token=${encodeURIComponent(token.access_token)}`);
    expect(info.status, info.text).toBe(200);
    expect(info.body.data).toMatchObject({ grant_id: ava.id, email: ava.email, sub: ava.id });
    const idInfo = await anonymous().get(`/v3/connect/tokeninfo?id_token=${encodeURIComponent(token.id_token)}`);
    expect(idInfo.status, idInfo.text).toBe(200);
    expect(idInfo.body.data).toMatchObject({ grant_id: ava.id, email: ava.email });
    expect((await anonymous().post(`/v3/connect/revoke?token=${encodeURIComponent(token.access_token)}`)).status).toBe(
      200,
    );
    const revoked = await asAva.get('/v3/grants/me');
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.type).toBe('authentication_error');
    const again = await anonymous().post(`/v3/connect/revoke?token=${encodeURIComponent(token.access_token)}`);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: 'invalid_token', error_code: '400' });
  });

  it('are refused for another application, a wrong key, or a forged token', async () => {
    const { applicationId, apiKey } = await makeApplication('tokens-a');
    const other = await makeApplication('tokens-b');
    const ava = await makeAgentGrant(apiClient(gateway().url, apiKey));
    // Another application's key, or a grant of another application: nothing.
    const crossKey = await anonymous().post('/v3/connect/token', {
      grant_type: 'client_credentials',
      client_id: applicationId,
      client_secret: other.apiKey,
      grant_id: ava.id,
    });
    expect(crossKey.status).toBe(401);
    expect(crossKey.body.error).toBe('invalid_client');
    const crossGrant = await anonymous().post('/v3/connect/token', {
      grant_type: 'client_credentials',
      client_id: other.applicationId,
      client_secret: other.apiKey,
      grant_id: ava.id,
    });
    expect(crossGrant.status).toBe(400);
    expect(crossGrant.body.error).toBe('invalid_grant');
    const wrongSecret = await anonymous().post('/v3/connect/token', {
      grant_type: 'client_credentials',
      client_id: applicationId,
      client_secret: 'sbk_not-a-key',
      grant_id: ava.id,
    });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body).toMatchObject({ error: 'invalid_client', error_code: '401' });
    expect(typeof wrongSecret.body.error_description).toBe('string');
    const forged = await apiClient(gateway().url, 'sbat_forged').get('/v3/grants/me');
    expect(forged.status).toBe(401);
    expect(forged.body.error.type).toBe('authentication_error');
    const missing = await anonymous().post('/v3/connect/token', {
      grant_type: 'client_credentials',
      client_id: applicationId,
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    const unknownType = await anonymous().post('/v3/connect/token', {
      grant_type: 'password',
      client_id: applicationId,
    });
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.error).toBe('invalid_request');
  });

  it('tokeninfo answers every error in the OAuth shape, as the token endpoint does', async () => {
    // Prepare
    const { applicationId, apiKey } = await makeApplication('tokeninfo');
    const owner = apiClient(gateway().url, apiKey);
    const ava = await makeAgentGrant(owner);
    const issue = async () => {
      const response = await anonymous().post('/v3/connect/token', {
        grant_type: 'client_credentials',
        client_id: applicationId,
        client_secret: apiKey,
        grant_id: ava.id,
      });
      expect(response.status, response.text).toBe(200);
      return response.body as { access_token: string; id_token: string };
    };
    const info = (query: string) => anonymous().get(`/v3/connect/tokeninfo?${query}`);
    const access = (token: string) => info(`access_token=${encodeURIComponent(token)}`);
    /** `{request_id, error, error_description, error_code, error_uri}` and nothing else, the request ID in x-request-id too. */
    const expectOAuth = (response: ApiResponse, error: string, description: string | RegExp, status = 400) => {
      expect(response.status, response.text).toBe(status);
      expect(response.body).toEqual({
        request_id: response.headers.get('x-request-id'),
        error,
        error_description: typeof description === 'string' ? description : expect.stringMatching(description),
        error_code: String(status),
        error_uri: expect.stringMatching(/^https:\/\//),
      });
      expect(response.headers.get('x-request-id')).toMatch(/^req_/);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    };
    const token = await issue();
    expect((await access(token.access_token)).status).toBe(200);

    // Act, Assess: the query.
    expectOAuth(await info(''), 'invalid_request', "Send exactly one of 'id_token' and 'access_token'");
    expectOAuth(
      await info(
        `access_token=${encodeURIComponent(token.access_token)}&id_token=${encodeURIComponent(token.id_token)}`,
      ),
      'invalid_request',
      "Send exactly one of 'id_token' and 'access_token'",
    );
    expectOAuth(
      await info(`access_token=${encodeURIComponent(token.access_token)}&client_id=${applicationId}`),
      'invalid_request',
      /unknown (query )?(parameter|field) 'client_id'/,
    );
    expectOAuth(
      await info(`access_token=${'a'.repeat(4097)}`),
      'invalid_request',
      /'access_token' must be at most 4096 characters/,
    );
    // Tokens that are not valid: unknown, forged, expired, revoked.
    expectOAuth(await access('sbat_forged'), 'invalid_token', 'The access token is unknown, revoked or expired');
    expectOAuth(await access('not-a-token'), 'invalid_token', 'The access token is unknown, revoked or expired');
    expectOAuth(await info('id_token=a.b.c'), 'invalid_token', 'The ID token is not valid (signature or expiry)');
    const [header, payload] = token.id_token.split('.');
    expectOAuth(
      await info(`id_token=${header}.${payload}.${'A'.repeat(43)}`),
      'invalid_token',
      'The ID token is not valid (signature or expiry)',
    );
    const restore = clock.set(() => Date.now() + 3601_000);
    try {
      expectOAuth(await access(token.access_token), 'invalid_token', 'The access token is unknown, revoked or expired');
      expectOAuth(
        await info(`id_token=${encodeURIComponent(token.id_token)}`),
        'invalid_token',
        'The ID token is not valid (signature or expiry)',
      );
    } finally {
      restore();
    }
    expect((await anonymous().post(`/v3/connect/revoke?token=${encodeURIComponent(token.access_token)}`)).status).toBe(
      200,
    );
    expectOAuth(await access(token.access_token), 'invalid_token', 'The access token is unknown, revoked or expired');
    // The grant deleted: its access tokens say nothing more (whether the token or only its grant is gone yet).
    const last = await issue();
    expect((await owner.delete(`/v3/grants/${ava.id}`)).status).toBe(200);
    expectOAuth(
      await access(last.access_token),
      'invalid_token',
      /^(The grant of this access token no longer exists|The access token is unknown, revoked or expired)$/,
    );
  });
});
