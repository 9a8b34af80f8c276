import { randomBytes } from 'node:crypto';
import { createApplication } from '#shared/applications/service';
import type { ApiClient } from './api';
import { registerApplication } from './outbox-relay';
import { rememberSecret } from './secrets';

/** Small fixture factories: every call makes fresh, unique data so tests never share state. */
export const uniqueEmail = (prefix = 'agent') => `${prefix}-${randomBytes(6).toString('hex')}@agents.test`;

export async function makeApplication(name = 'Test application') {
  const app = await createApplication({ name });
  rememberSecret(app.api_key, `API key of application ${app.application_id}`);
  // Its notifications reach this file's fan-out queue through the outbox consumer.
  await registerApplication(app.application_id);
  return { applicationId: app.application_id, apiKey: app.api_key };
}

export async function makeAgentGrant(api: ApiClient, overrides: { email?: string; external_id?: string } = {}) {
  const response = await api.post('/v3/connect/custom', {
    provider: 'nylas',
    settings: { email: overrides.email ?? uniqueEmail() },
    ...(overrides.external_id !== undefined ? { external_id: overrides.external_id } : {}),
  });
  if (response.status !== 201) throw new Error(`makeAgentGrant: ${response.status} ${response.text}`);
  return response.body.data as { id: string; email: string; external_id?: string; [key: string]: unknown };
}
