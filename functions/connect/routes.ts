import { CreateCustomGrantBody, Grant } from '#schemas/grants';
import type { RouteTable } from '#shared/http/route';

/** Authentication endpoints that create grants. Hosted OAuth joins this group later. */
export const routes = {
  createCustomGrant: {
    method: 'POST',
    path: '/v3/connect/custom',
    summary: 'Create a grant by custom authentication (provider "nylas", alias "agent", creates an Agent Account)',
    body: CreateCustomGrantBody,
    response: Grant,
    status: 201,
  },
} as const satisfies RouteTable;
