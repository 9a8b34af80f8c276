import { page } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { bookingPageOf, managePageOf } from '#shared/scheduling/booking-pages';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  bookingPage: async ({ params, query }) => {
    const { html, nonce, status } = await bookingPageOf(params.slug, query);
    return page(html, nonce, status);
  },
  managePage: async ({ params }) => {
    const { html, nonce, status } = await managePageOf(params.slug, params.reference);
    return page(html, nonce, status);
  },
});
