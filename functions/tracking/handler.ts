import { document, redirect } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { TRANSPARENT_GIF, trackClick, trackOpen } from '#shared/tracking/events';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  openPixel: async ({ params, sourceIp, userAgent, headers }) => {
    await trackOpen(params.token, { sourceIp, userAgent, headers });
    return document(TRANSPARENT_GIF, 'image/gif', 'pixel.gif', { noStore: true });
  },
  linkRedirect: async ({ params, sourceIp, userAgent, headers }) =>
    redirect(await trackClick(params.token, { sourceIp, userAgent, headers })),
});
