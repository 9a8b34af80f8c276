import { describe, expect, it } from 'vitest';
import { API_ROUTES } from '#functions/routes';
import { buildOpenApi } from '#schemas/openapi';

/** What the published description says about list envelopes and who may call the scheduler's public endpoints. */
const doc = buildOpenApi(API_ROUTES);
type Operation = {
  security: object[];
  responses: Record<
    string,
    {
      content?: Record<
        string,
        { schema: { required?: string[]; properties?: Record<string, { type: unknown; description?: string }> } }
      >;
    }
  >;
};
const operation = (path: string, method: string) => (doc.paths[path] as Record<string, Operation>)[method]!;

describe('Function: buildOpenApi', () => {
  it('describes next_cursor of every list as an optional string, present only when more results exist', () => {
    let lists = 0;
    for (const routes of Object.values(API_ROUTES)) {
      for (const route of Object.values(routes)) {
        if (route.responseKind !== 'list') continue;
        lists++;
        const schema = operation(route.path, route.method.toLowerCase()).responses['200']!.content!['application/json']!
          .schema;
        expect(schema.required, route.path).toEqual(['request_id', 'data']);
        expect(schema.properties!.next_cursor!.type, route.path).toBe('string');
        expect(schema.properties!.next_cursor!.description).toMatch(/present only when more results exist/);
      }
    }
    expect(lists).toBeGreaterThan(10);
  });

  it('lets the public scheduler endpoints be called without credentials, with a session or with the API key', () => {
    for (const [path, method] of [
      ['/v3/scheduling/availability', 'get'],
      ['/v3/scheduling/bookings', 'post'],
      ['/v3/scheduling/bookings/{booking_id}', 'get'],
      ['/v3/scheduling/bookings/{booking_id}', 'put'],
      ['/v3/scheduling/bookings/{booking_id}', 'patch'],
      ['/v3/scheduling/bookings/{booking_id}', 'delete'],
    ] as const) {
      expect(operation(path, method).security, `${method} ${path}`).toEqual([
        {},
        { schedulerSession: [] },
        { apiKey: [] },
      ]);
    }
    expect(operation('/v3/scheduling/configurations', 'get').security).toEqual([{ apiKey: [] }]);
    expect(operation('/scheduling/{slug}', 'get').security).toEqual([]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['apiKey', 'schedulerSession']);
  });
});
