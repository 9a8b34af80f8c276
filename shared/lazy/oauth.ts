/**
 * Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): oauth4webapi, for shared/oauth/ (token
 * grants, discovery, user info). Only a token refresh, a sign-in or a discovery needs it, so no
 * function loads it at init. Its types are re-exported too (they cost nothing at run time).
 */
export {
  ClientSecretBasic,
  ClientSecretPost,
  HTTP_REQUEST_FORBIDDEN,
  INVALID_SERVER_METADATA,
  JSON_ATTRIBUTE_COMPARISON,
  JWT_CLAIM_COMPARISON,
  JWT_TIMESTAMP_CHECK,
  KEY_SELECTION,
  MISSING_SERVER_METADATA,
  None,
  OperationProcessingError,
  REQUEST_PROTOCOL_FORBIDDEN,
  RESPONSE_IS_NOT_CONFORM,
  ResponseBodyError,
  UnsupportedOperationError,
  WWWAuthenticateChallengeError,
  allowInsecureRequests,
  clientCredentialsGrantRequest,
  customFetch,
  discoveryRequest,
  genericTokenEndpointRequest,
  getValidatedIdTokenClaims,
  jwksCache,
  processAuthorizationCodeResponse,
  processClientCredentialsResponse,
  processDiscoveryResponse,
  processGenericTokenEndpointResponse,
  processRefreshTokenResponse,
  processRevocationResponse,
  processUserInfoResponse,
  refreshTokenGrantRequest,
  revocationRequest,
  userInfoRequest,
  validateApplicationLevelSignature,
} from 'oauth4webapi';
// The hook for issuers that vary per token (shared/oauth/client.ts): exported for openid-client, untyped.
// @ts-expect-error not in the library's declarations
export { _expectedIssuer } from 'oauth4webapi';
export type {
  AuthorizationServer,
  Client,
  ClientAuth,
  JWKSCacheInput,
  TokenEndpointResponse,
  UserInfoResponse,
} from 'oauth4webapi';
