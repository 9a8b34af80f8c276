import { afterAll, beforeAll } from 'vitest';
import { apiClient, type ApiClient } from './api';
import { makeApplication } from './factories';
import { startGateway, type Gateway } from './gateway';

/**
 * For a test file: before its tests, starts the API gateway and creates an application; after them,
 * closes the gateway. `api` calls the API as that application (usable once the tests run;
 * `applicationId()` is its ID, the scheduler's `client_id`);
 * `otherApi()` makes a client of a new application, for tenant-isolation tests.
 */
export function useApi(): {
  api: ApiClient;
  gateway: () => Gateway;
  applicationId: () => string;
  otherApi: (name?: string) => Promise<ApiClient>;
} {
  let gateway: Gateway | undefined;
  let client: ApiClient | undefined;
  let applicationId: string | undefined;
  beforeAll(async () => {
    gateway = await startGateway();
    const app = await makeApplication();
    applicationId = app.applicationId;
    client = apiClient(gateway.url, app.apiKey);
  });
  afterAll(async () => gateway?.close());
  const started = () => {
    if (!gateway || !client)
      throw new Error('useApi(): the API is available inside tests and hooks, once beforeAll has run');
    return { gateway, client };
  };
  return {
    api: new Proxy({} as ApiClient, { get: (_, method) => Reflect.get(started().client, method) }),
    gateway: () => started().gateway,
    applicationId: () => (started(), applicationId!),
    otherApi: async (name = 'other') => apiClient(started().gateway.url, (await makeApplication(name)).apiKey),
  };
}
