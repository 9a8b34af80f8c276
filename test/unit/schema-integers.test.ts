import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { API_ROUTES } from '#functions/routes';
import { InvalidRequestError } from '#shared/errors';
import { routeKey, type GeneratedRoutes, type RouteSpec } from '#shared/http/route';
import { refuseUnsafeNumbers, toValidator, unsafeNumber } from '#shared/http/validation';
import { bodyTextWith, bodyWith, fieldLabel, numberFields, outOfBounds } from '../support/schema-fields';

/**
 * Every number a request schema accepts is bounded by what JavaScript and the DynamoDB client hold
 * exactly (the client throws past Number.MAX_SAFE_INTEGER, which reached clients as a 500), and the
 * generated validators say so in the error envelope's words: the field and the bound.
 */
const require = createRequire(import.meta.url);
const ROUTES = Object.entries(API_ROUTES).flatMap(([group, table]) =>
  Object.entries(table).map(([name, spec]) => ({ group, name, spec: spec as RouteSpec })),
);
const FIELDS = ROUTES.flatMap((route) => numberFields(route.spec).fields.map((field) => ({ ...route, field })));

describe('Schemas: numbers', () => {
  it('walks a schema of every shape the route tables use, and finds their numbers', () => {
    // Assess: the walker sees the fields the issue named, so an empty sweep below cannot pass by finding nothing.
    const labels = FIELDS.map((f) => `${routeKey(f.spec)} ${f.field.where} ${fieldLabel(f.field)}`);
    expect(labels).toContain('POST /v3/grants/{grant_id}/events body capacity');
    expect(labels).toContain('PUT /v3/grants/{grant_id}/events/{event_id} body capacity');
    expect(labels).toContain('GET /v3/grants query since');
    expect(labels).toContain('GET /v3/grants query before');
    expect(labels).toContain('POST /v3/calendars/availability body participants[0].open_hours[0].days[0]');
    expect(FIELDS.length).toBeGreaterThan(100);
  });

  it.each(ROUTES.map((r) => [routeKey(r.spec), r] as const))(
    '%s: every integer and number has bounds JavaScript and DynamoDB hold',
    (_key, route) => {
      const { fields, unwalkable } = numberFields(route.spec);
      expect(unwalkable).toEqual([]);
      const problems = fields
        .filter(
          (f) =>
            !(
              f.maximum !== undefined &&
              Number.isFinite(f.maximum) &&
              f.maximum <= Number.MAX_SAFE_INTEGER &&
              f.minimum !== undefined &&
              Number.isFinite(f.minimum) &&
              f.minimum >= -Number.MAX_SAFE_INTEGER
            ),
        )
        .map((f) => `${f.where} '${fieldLabel(f)}' (${f.type}) is bounded [${f.minimum}, ${f.maximum}]`);
      expect(problems).toEqual([]);
    },
  );

  it('reports a number without bounds, and a schema it cannot read', () => {
    // Prepare: the shapes a new schema could slip in with.
    const route = {
      query: { type: 'object', properties: { since: { type: 'integer', minimum: 0 } } },
      body: {
        type: 'object',
        properties: {
          nested: {
            type: 'array',
            items: { type: 'object', properties: { n: { type: ['number', 'null'], maximum: 1e308 } } },
          },
          loose: {},
          ref: { $ref: '#/x' },
        },
      },
    } as const;

    // Act
    const { fields, unwalkable } = numberFields(route);

    // Assess
    expect(fields.map((f) => [f.where, fieldLabel(f), f.minimum, f.maximum])).toEqual([
      ['query', 'since', 0, undefined],
      ['body', 'nested[0].n', undefined, 1e308],
    ]);
    expect(unwalkable.map((u) => u.steps.join('.'))).toEqual(['loose', 'ref']);
  });

  it.each(FIELDS.map((f) => [`${routeKey(f.spec)} ${f.field.where} ${fieldLabel(f.field)}`, f] as const))(
    '%s: the generated validator refuses values beyond the bounds, naming field and bound',
    (_label, { group, name, field }) => {
      const generated = require(`../../functions/${group}/routes.generated.cjs`) as GeneratedRoutes;
      const validate = toValidator(
        field.where === 'query' ? generated.query[name]! : generated.body[name]!,
        field.where,
      );
      for (const { literal, message } of outOfBounds(field)) {
        // A query carries the number as text (the validator coerces it); a body as JSON.
        const value =
          field.where === 'query' ? { [field.steps[0]!]: literal } : JSON.parse(bodyTextWith(field, literal));
        let thrown: unknown;
        try {
          validate(value);
        } catch (error) {
          thrown = error;
        }
        expect(thrown, `${literal}`).toBeInstanceOf(InvalidRequestError);
        expect((thrown as Error).message, literal).toContain(message);
      }
    },
  );
});

describe('Function: unsafeNumber', () => {
  it('finds numbers that JavaScript and DynamoDB cannot hold exactly, wherever they are', () => {
    expect(unsafeNumber({ a: 1, b: [1, 2, { c: 9007199254740992 }] }, 'body')).toEqual({
      field: 'b[2].c',
      value: 9007199254740992,
    });
    expect(unsafeNumber({ variables: { big: -1e308 } }, 'body')).toEqual({ field: 'variables.big', value: -1e308 });
    expect(unsafeNumber({ limit: Infinity }, 'query')).toEqual({ field: 'limit', value: Infinity });
    expect(unsafeNumber(1e20, 'body')).toEqual({ field: 'body', value: 1e20 });
  });

  it('passes safe integers, fractions and other values', () => {
    expect(
      unsafeNumber(
        { a: Number.MAX_SAFE_INTEGER, b: -Number.MAX_SAFE_INTEGER, c: 0.5, d: 'x'.repeat(30), e: null, f: [true] },
        'body',
      ),
    ).toBeUndefined();
  });

  it('walks a deeply nested body without exhausting the stack', () => {
    const deep = JSON.parse(`${'['.repeat(200_000)}1e300${']'.repeat(200_000)}`);
    expect(unsafeNumber(deep, 'body')?.value).toBe(1e300);
  });

  it('is refused as a 400 that names the field and the bound', () => {
    expect(() => refuseUnsafeNumbers(bodyWith({ steps: ['template', 'variables', 'n'] }, 1e308), 'body')).toThrow(
      new InvalidRequestError(
        "Invalid request body: 'template.variables.n' must be between -9007199254740991 and 9007199254740991 (larger numbers are not held exactly; send them as strings)",
      ),
    );
    expect(() => refuseUnsafeNumbers({ limit: -Infinity }, 'query')).toThrow(
      "Invalid query: 'limit' must be a finite number",
    );
  });
});
