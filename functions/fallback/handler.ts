import { fallbackApi } from '#shared/http/fallback';
import { ALL_ROUTES } from '../routes';

/**
 * API Gateway's `$default` route: every request no other route matched. Answers 405 (with `Allow`)
 * when the path exists under another method, 404 otherwise, both in the error envelope.
 */
export const handler = fallbackApi(ALL_ROUTES);
