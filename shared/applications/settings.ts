import type { ApplicationContext } from '#shared/caller';
import {
  checkRateLimitSetting,
  effectiveRateLimit,
  forgetApplicationRateLimit,
} from '#shared/applications/rate-limits';
import { listRedirectUriViews } from '#shared/applications/redirect-uris';
import {
  getApplicationWithSettings,
  updateApplicationSettings,
  type ApplicationWithSettings,
} from '#shared/db/applications';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import type { BrandingSettings, HostedAuthenticationSettings, UpdateApplicationBody } from '#schemas/applications';

/**
 * The calling application's settings: its branding, the look of the hosted authentication page and
 * its request rate limit (GET and PATCH /v3/applications). Each nested object a PATCH sends replaces
 * the stored one as a whole, as the published contract does; `rate_limit: null` returns to the
 * deployment's limits.
 */

/** Fields whose values are URLs the hosted authentication page shows or links to. */
const BRANDING_URLS = ['icon_url', 'website_url'] as const;
const PAGE_URLS = ['background_image_url', 'terms_of_service_url', 'privacy_policy_url'] as const;

/** A URL a page shows or links to: https only (a page served over https cannot load http content, and must not link to javascript:). */
function checkPageUrl(value: string, field: string): void {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (
    !url ||
    url.protocol !== 'https:' ||
    !url.hostname ||
    url.username ||
    url.password ||
    !/^[\x21-\x7e]+$/.test(value)
  ) {
    throw new InvalidRequestError(`'${field}' must be an https URL, e.g. https://example.com/logo.png`);
  }
}

function checkUrls(object: Record<string, unknown> | undefined, names: readonly string[], prefix: string): void {
  for (const name of names) {
    const value = object?.[name];
    if (typeof value === 'string') checkPageUrl(value, `${prefix}.${name}`);
  }
}

function applicationView(app: ApplicationWithSettings, callbackUris: Awaited<ReturnType<typeof listRedirectUriViews>>) {
  const branding = (app.branding ?? {}) as BrandingSettings;
  return {
    application_id: app.id,
    // The hosted authentication page always shows a name: the application's own unless branding sets one.
    branding: { ...branding, name: branding.name ?? app.name },
    hosted_authentication: (app.hosted_authentication ?? {}) as HostedAuthenticationSettings,
    callback_uris: callbackUris,
    rate_limit: effectiveRateLimit(app.rate_limit),
    created_at: app.created_at,
    updated_at: app.updated_at ?? app.created_at,
  };
}

async function requireApplication(appId: ApplicationId): Promise<ApplicationWithSettings> {
  const app = await getApplicationWithSettings(appId);
  // An authenticated key whose application is gone: nothing to show.
  if (!app) throw new NotFoundError('Application not found');
  return app;
}

export async function getApplication(app: ApplicationContext) {
  const [record, callbackUris] = await Promise.all([
    requireApplication(app.applicationId),
    listRedirectUriViews(app.applicationId),
  ]);
  return applicationView(record, callbackUris);
}

export async function updateApplication(app: ApplicationContext, body: UpdateApplicationBody) {
  checkUrls(body.branding, BRANDING_URLS, 'branding');
  checkUrls(body.hosted_authentication, PAGE_URLS, 'hosted_authentication');
  checkRateLimitSetting(body.rate_limit);
  const updated = await updateApplicationSettings(
    app.applicationId,
    { branding: body.branding, hosted_authentication: body.hosted_authentication, rate_limit: body.rate_limit },
    clock.nowSeconds(),
  );
  if (!updated) throw new NotFoundError('Application not found');
  if (body.rate_limit !== undefined) forgetApplicationRateLimit(app.applicationId);
  return applicationView(updated, await listRedirectUriViews(app.applicationId));
}

/** The settings the hosted authentication page is drawn with (for the OAuth flow's page). */
export async function applicationBranding(
  appId: ApplicationId,
): Promise<
  { branding: BrandingSettings & { name: string }; hosted_authentication: HostedAuthenticationSettings } | undefined
> {
  const app = await getApplicationWithSettings(appId);
  if (!app) return undefined;
  const view = applicationView(app, []);
  return { branding: view.branding, hosted_authentication: view.hosted_authentication };
}
