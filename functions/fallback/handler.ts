import { fallbackApi } from '#shared/http/fallback';
import generated from './routes.generated.cjs';

/**
 * API Gateway's `$default` route: every request no other route matched. Answers 405 (with `Allow`)
 * when the path exists under another method, 404 otherwise, both in the error envelope. It loads the
 * generated method and path list, not the route tables and their schemas.
 */
export const handler = fallbackApi(generated.routes);
