import type { FromSchema } from 'json-schema-to-ts';
import { Limit, PageToken, safeInteger } from '#schemas/common';

/**
 * The calling application's settings (branding, the hosted authentication page) and its redirect
 * (callback) URIs. URLs are checked in shared/applications/ (scheme, host, fragment rules per
 * platform), so the 400 can say which rule a URL broke.
 */

/** A URL the hosted authentication page shows or links to: https only (checked in code). */
const PageUrl = { type: 'string', minLength: 1, maxLength: 2048, description: 'An https URL.' } as const;
/** CSS colours reach a page's style sheet: hexadecimal only, so no value can carry other CSS. */
const Color = {
  type: 'string',
  pattern: '^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$',
  description: 'A hexadecimal colour: #rgb or #rrggbb.',
} as const;
/** Text shown on a page: one line, no control characters. */
const PageText = (maxLength: number) =>
  ({ type: 'string', minLength: 1, maxLength, pattern: '^[^\\u0000-\\u001f\\u007f]*$' }) as const;

export const Branding = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: {
      ...PageText(256),
      description: "Shown to users on the hosted authentication page; default: the application's name.",
    },
    icon_url: PageUrl,
    website_url: PageUrl,
    description: { type: 'string', maxLength: 1024 },
  },
} as const;

export const HostedAuthentication = {
  type: 'object',
  additionalProperties: false,
  properties: {
    background_image_url: PageUrl,
    alignment: { type: 'string', enum: ['left', 'center', 'right'] },
    color_primary: Color,
    color_secondary: Color,
    background_color: Color,
    title: PageText(256),
    subtitle: PageText(512),
    spacing: { type: 'integer', minimum: 0, maximum: 100, description: 'CSS spacing in px.' },
    terms_of_service_url: PageUrl,
    privacy_policy_url: PageUrl,
  },
} as const;

export const REDIRECT_PLATFORMS = ['web', 'desktop', 'js', 'ios', 'android'] as const;
export type RedirectPlatform = (typeof REDIRECT_PLATFORMS)[number];

/** Settings of one platform each (`origin`: js; `bundle_id`, `app_store_id`, `team_id`: ios; the rest: android). Checked against the platform in code. */
export const RedirectUriSettings = {
  type: 'object',
  additionalProperties: false,
  properties: {
    origin: {
      type: 'string',
      minLength: 1,
      maxLength: 2048,
      description: 'js: the origin the application is served from, e.g. https://app.example.com (required).',
    },
    bundle_id: {
      type: 'string',
      maxLength: 155,
      pattern: '^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$',
      description: 'ios: the bundle identifier, e.g. com.example.app (required).',
    },
    app_store_id: { type: 'string', pattern: '^[0-9]{1,20}$', description: 'ios: the App Store ID (digits).' },
    team_id: { type: 'string', pattern: '^[A-Z0-9]{10}$', description: 'ios: the Apple developer team ID.' },
    package_name: {
      type: 'string',
      maxLength: 255,
      pattern: '^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+$',
      description: 'android: the package name, e.g. com.example.app (required).',
    },
    sha1_certificate_fingerprint: {
      type: 'string',
      pattern: '^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){19}$',
      description: 'android: SHA-1 fingerprint of the signing certificate, AB:CD:… (required).',
    },
  },
} as const;

const RedirectUrl = {
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  description:
    'web, js: https, or http to localhost, 127.0.0.1 or [::1]. desktop: https, http to loopback (any port matches), or a custom scheme. ios, android: https, http to loopback or a custom scheme. Never a fragment.',
} as const;

export const RedirectUriObject = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'url', 'platform', 'settings', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    url: { type: 'string' },
    platform: { type: 'string', enum: REDIRECT_PLATFORMS },
    settings: RedirectUriSettings,
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const CreateRedirectUriBody = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: RedirectUrl,
    platform: { type: 'string', enum: REDIRECT_PLATFORMS, description: 'Default: web.' },
    settings: RedirectUriSettings,
  },
} as const;
export type CreateRedirectUriBody = FromSchema<typeof CreateRedirectUriBody>;

export const UpdateRedirectUriBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    url: RedirectUrl,
    platform: {
      type: 'string',
      enum: REDIRECT_PLATFORMS,
      description: "Changing the platform replaces the settings with the body's (the new platform's).",
    },
    settings: { ...RedirectUriSettings, description: 'Replaces the stored settings as a whole.' },
  },
} as const;
export type UpdateRedirectUriBody = FromSchema<typeof UpdateRedirectUriBody>;

export const RedirectUriListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken },
} as const;
export type RedirectUriListQuery = FromSchema<typeof RedirectUriListQuery>;

/**
 * Requests a second, and at once, the application may make (every request authenticated as it: API
 * key, access token or scheduler session). The most it may set is the deployment's
 * RATE_LIMIT_MAX_PER_SECOND (checked in code, so the 400 can say the maximum); the schema only keeps
 * the numbers whole and safe.
 */
const RateLimitFields = {
  requests_per_second: {
    ...safeInteger(1),
    description:
      "Requests a second, sustained; at most the deployment's maximum (RATE_LIMIT_MAX_PER_SECOND, default 500).",
  },
  burst: {
    ...safeInteger(1),
    description: 'Requests at once after a quiet while; at most twice the deployment maximum of requests_per_second.',
  },
} as const;

export const ApplicationRateLimit = {
  type: 'object',
  additionalProperties: false,
  required: ['requests_per_second', 'burst'],
  properties: RateLimitFields,
} as const;

export const ApplicationObject = {
  type: 'object',
  additionalProperties: false,
  required: [
    'application_id',
    'branding',
    'hosted_authentication',
    'callback_uris',
    'rate_limit',
    'created_at',
    'updated_at',
  ],
  properties: {
    application_id: { type: 'string' },
    branding: { ...Branding, required: ['name'] },
    hosted_authentication: HostedAuthentication,
    callback_uris: {
      type: 'array',
      items: RedirectUriObject,
      description: 'Read-only here: managed with /v3/applications/redirect-uris.',
    },
    rate_limit: {
      ...ApplicationRateLimit,
      description:
        "The limits in force: the application's own, else the deployment's (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST).",
    },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const UpdateApplicationBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    branding: { ...Branding, description: 'Replaces the stored branding as a whole.' },
    hosted_authentication: {
      ...HostedAuthentication,
      description: 'Replaces the stored hosted authentication settings as a whole.',
    },
    rate_limit: {
      ...ApplicationRateLimit,
      type: ['object', 'null'],
      description:
        "The application's own request rate limit, replacing the deployment's; null returns to the deployment's.",
    },
  },
} as const;
export type UpdateApplicationBody = FromSchema<typeof UpdateApplicationBody>;
export type BrandingSettings = FromSchema<typeof Branding>;
export type HostedAuthenticationSettings = FromSchema<typeof HostedAuthentication>;
export type ApplicationRateLimit = FromSchema<typeof ApplicationRateLimit>;
export type RedirectUriSettingsValue = FromSchema<typeof RedirectUriSettings>;
