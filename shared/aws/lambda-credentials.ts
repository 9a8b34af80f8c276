import { fromEnv } from '@aws-sdk/credential-provider-env';

/**
 * Lambda bundles only: serverless.yml aliases `@aws-sdk/credential-provider-node` to this module.
 * Lambda (and `npm start`, which exports AWS_ACCESS_KEY_ID/SECRET) always provides credentials in
 * the environment, so the SDK's full default chain (SSO, INI profiles, STS, IMDS, with their nested
 * clients) is dead weight: dropping it saves ~135 KB and ~10 ms of cold start per function.
 * Scripts and tests, which are not bundled, keep the SDK's complete chain.
 */
export const defaultProvider = (init: Parameters<typeof fromEnv>[0] = {}) => fromEnv(init);
