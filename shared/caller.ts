import type { ApplicationId, ConfigurationId, GrantId } from '#shared/ids';

/**
 * The calling application, and how it authenticated: with its API key (any of its grants and
 * application-level endpoints), or with an access token from the hosted OAuth token exchange (its
 * one grant's endpoints only, `me` included).
 */
export type ApplicationContext =
  | { applicationId: ApplicationId; credential: 'api_key' }
  | { applicationId: ApplicationId; credential: 'access_token'; grantId: GrantId; scope: string[] };

/** A scheduler session (`Authorization: Bearer <session>`): one configuration of one application, nothing else. */
export interface SessionContext {
  applicationId: ApplicationId;
  configurationId: ConfigurationId;
}
