import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

let gateway: Gateway;
let api: ApiClient;

beforeAll(async () => {
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
});

afterAll(async () => {
  await gateway?.close();
});

type Engine = 'mustache' | 'handlebars' | 'twig';

/** A well-formed ID of the right prefix that was never issued. */
const UNKNOWN_TEMPLATE_ID = 'tpl_01jzzzzzzzzzzzzzzzzzzzzzzz';
const UNKNOWN_SIGNATURE_ID = 'sig_01jzzzzzzzzzzzzzzzzzzzzzzz';

/** The same placeholder in each engine's syntax. */
const SOURCES: Record<Engine, { subject: string; body: string }> = {
  mustache: { subject: 'Hi {{name}} from {{team.city}}', body: '<p>Dear {{name}} of {{team.city}}{{missing}}</p>' },
  handlebars: { subject: 'Hi {{name}} from {{team.city}}', body: '<p>Dear {{name}} of {{team.city}}{{missing}}</p>' },
  twig: {
    subject: 'Hi {{ name }} from {{ team.city }}',
    body: '<p>Dear {{ name }} of {{ team.city }}{{ missing }}</p>',
  },
};

/** Each engine's own HTML escaping of the apostrophe; the other characters are escaped alike. */
const APOSTROPHE: Record<Engine, string> = { mustache: '&#39;', handlebars: '&#x27;', twig: '&#039;' };

/** A syntax error in each engine, with what the 400 message must quote. */
const SYNTAX_ERRORS: Record<Engine, { source: string; detail: string }> = {
  mustache: { source: 'Hello {{name', detail: 'Unclosed tag at line 1, column 13' },
  handlebars: { source: 'Hello {{name', detail: 'Parse error on line 1' },
  twig: { source: 'Hello {{ name', detail: "Unable to find closing bracket '}}'" },
};

async function createTemplate(client: ApiClient, grantId: string, body: Record<string, unknown>) {
  const response = await client.post(`/v3/grants/${grantId}/templates`, body);
  if (response.status !== 200) throw new Error(`createTemplate: ${response.status} ${response.text}`);
  return response.body.data as {
    id: string;
    engine: Engine;
    name: string;
    subject: string;
    body: string;
    created_at: number;
    updated_at: number;
  };
}

async function createSignature(client: ApiClient, grantId: string, body: { name: string; body: string }) {
  const response = await client.post(`/v3/grants/${grantId}/signatures`, body);
  if (response.status !== 201) throw new Error(`createSignature: ${response.status} ${response.text}`);
  return response.body.data as { id: string; name: string; body: string; created_at: number; updated_at: number };
}

function expectError(response: ApiResponse, status: number, type: string, ...fragments: string[]) {
  expect(response.status, response.text).toBe(status);
  expect(response.body.error.type).toBe(type);
  expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
  for (const fragment of fragments) expect(response.body.error.message).toContain(fragment);
}

describe('POST /v3/grants/{grant_id}/templates', () => {
  it('creates a template with every field of the Template object', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);

    // Act
    const response = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: 'Welcome',
      engine: 'handlebars',
      subject: 'Welcome {{name}}',
      body: '<p>Hello {{name}}</p>',
    });

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
    const template = response.body.data;
    expect(template).toEqual({
      id: expect.stringMatching(/^tpl_[0-9a-z]{26}$/),
      object: 'template',
      grant_id: grant.id,
      app_id: null,
      engine: 'handlebars',
      name: 'Welcome',
      subject: 'Welcome {{name}}',
      body: '<p>Hello {{name}}</p>',
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expect(template.created_at).toBeGreaterThan(1_700_000_000);
    expect(template.updated_at).toBe(template.created_at);
  });

  it('stores an empty subject when none is given', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, { name: 'No subject', engine: 'mustache', body: 'x' });
    expect(template.subject).toBe('');
    expect((await api.get(`/v3/grants/${grant.id}/templates/${template.id}`)).body.data.subject).toBe('');
  });

  it('answers 400 for an unknown engine, listing the valid ones', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: 'Liquid',
      engine: 'liquid',
      body: 'x',
    });
    expectError(response, 400, 'invalid_request_error', "'engine'", 'mustache', 'handlebars', 'twig');
    expect((await api.get(`/v3/grants/${grant.id}/templates`)).body.data).toEqual([]);
  });

  it.each([
    [{ engine: 'mustache', body: 'x' }, "'name' is required"],
    [{ name: 'n', engine: 'mustache' }, "'body' is required"],
    [{ name: 'n', body: 'x' }, "'engine' is required"],
    [{ name: '', engine: 'mustache', body: 'x' }, "'name' must not be empty"],
    [{ name: 'n', engine: 'mustache', body: 'x', colour: 'red' }, "unknown field 'colour'"],
    [{ name: 'n', engine: 'mustache', body: 42 }, "'body' must be of type string"],
  ])('rejects %j with 400 naming the field', async (body, message) => {
    const grant = await makeAgentGrant(api);
    expectError(await api.post(`/v3/grants/${grant.id}/templates`, body), 400, 'invalid_request_error', message);
  });

  it.each(['mustache', 'handlebars', 'twig'] as const)(
    'answers 400 for a %s syntax error, naming the field and the engine',
    async (engine) => {
      // Prepare
      const grant = await makeAgentGrant(api);
      const { source, detail } = SYNTAX_ERRORS[engine];

      // Act
      const inBody = await api.post(`/v3/grants/${grant.id}/templates`, { name: 'Broken', engine, body: source });
      const inSubject = await api.post(`/v3/grants/${grant.id}/templates`, {
        name: 'Broken',
        engine,
        subject: source,
        body: 'fine',
      });

      // Assess
      expectError(inBody, 400, 'invalid_request_error', `'body' is not a valid ${engine} template`, detail);
      expectError(inSubject, 400, 'invalid_request_error', `'subject' is not a valid ${engine} template`, detail);
      expect((await api.get(`/v3/grants/${grant.id}/templates`)).body.data).toEqual([]);
    },
  );

  it("refuses twig's {% include %} with 400", async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: 'Include',
      engine: 'twig',
      body: 'Hi {% include "header.twig" %}',
    });
    expectError(
      response,
      400,
      'invalid_request_error',
      "'body' uses the twig tag '{% include %}'",
      'cannot load other templates',
    );
    const fn = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: 'Include',
      engine: 'twig',
      subject: '{{ include("x.twig") }}',
      body: 'x',
    });
    expectError(fn, 400, 'invalid_request_error', "'subject' uses the twig function 'include()'");
  });

  it('refuses mustache and handlebars partials with 400', async () => {
    const grant = await makeAgentGrant(api);
    const mustache = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: 'P',
      engine: 'mustache',
      body: 'Hi {{> footer}}',
    });
    expectError(mustache, 400, 'invalid_request_error', "'body' uses the mustache partial");
    const handlebars = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: 'P',
      engine: 'handlebars',
      body: 'Hi {{> footer}}',
    });
    expectError(handlebars, 400, 'invalid_request_error', "'body' uses the handlebars partial");
  });
});

describe('GET /v3/grants/{grant_id}/templates', () => {
  it('lists newest first and pages with limit=1 and next_cursor', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const created = [];
    for (const name of ['first', 'second', 'third'])
      created.push(await createTemplate(api, grant.id, { name, engine: 'mustache', body: name }));
    const newestFirst = created.map((t) => t.id).reverse();

    // Act
    const all = await api.get(`/v3/grants/${grant.id}/templates`);
    const pages: string[][] = [];
    let cursor: string | undefined;
    let last: ApiResponse | undefined;
    do {
      last = await api.get(
        `/v3/grants/${grant.id}/templates?limit=1${cursor ? `&page_token=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(last.status, last.text).toBe(200);
      pages.push(last.body.data.map((t: { id: string }) => t.id));
      cursor = last.body.next_cursor;
    } while (cursor && pages.length < 10);

    // Assess
    expect(all.body.data.map((t: { id: string }) => t.id)).toEqual(newestFirst);
    expect(all.body).not.toHaveProperty('next_cursor');
    expect(all.body.data[0]).toMatchObject({ object: 'template', name: 'third', grant_id: grant.id });
    expect(pages).toEqual(newestFirst.map((id) => [id]));
    expect(last.body).not.toHaveProperty('next_cursor');
    const exact = await api.get(`/v3/grants/${grant.id}/templates?limit=3`);
    expect(exact.body.data).toHaveLength(3);
    expect(exact.body).not.toHaveProperty('next_cursor');
  });

  it('lists only the templates of the grant', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const mine = await createTemplate(api, a.id, { name: 'mine', engine: 'twig', body: 'x' });
    await createTemplate(api, b.id, { name: 'theirs', engine: 'twig', body: 'y' });
    expect((await api.get(`/v3/grants/${a.id}/templates`)).body.data.map((t: { id: string }) => t.id)).toEqual([
      mine.id,
    ]);
  });

  it('projects fields with select and rejects bad list parameters', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, { name: 'Sel', engine: 'mustache', body: 'x' });
    const selected = await api.get(`/v3/grants/${grant.id}/templates?select=id,name`);
    expect(selected.body.data).toEqual([{ id: template.id, name: 'Sel' }]);
    for (const query of ['limit=0', 'page_token=garbage', 'colour=red', 'select=id,colour']) {
      const response = await api.get(`/v3/grants/${grant.id}/templates?${query}`);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
      expect(response.body.error.type).toBe('invalid_request_error');
    }
  });
});

describe('GET /v3/grants/{grant_id}/templates/{template_id}', () => {
  it('returns the template, and only the selected fields with select', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, {
      name: 'Get me',
      engine: 'twig',
      subject: 'S {{ a }}',
      body: 'B {{ b }}',
    });

    const response = await api.get(`/v3/grants/${grant.id}/templates/${template.id}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual(template);

    const selected = await api.get(`/v3/grants/${grant.id}/templates/${template.id}?select=id,engine,subject`);
    expect(selected.status, selected.text).toBe(200);
    expect(selected.body.data).toEqual({ id: template.id, engine: 'twig', subject: 'S {{ a }}' });
    const unknown = await api.get(`/v3/grants/${grant.id}/templates/${template.id}?select=id,colour`);
    expectError(unknown, 400, 'invalid_request_error', 'colour');
  });

  it('answers 404 for unknown IDs, IDs of another grant and grants of another application', async () => {
    // Prepare
    const owner = await makeAgentGrant(api);
    const sibling = await makeAgentGrant(api);
    const template = await createTemplate(api, owner.id, { name: 'Private', engine: 'mustache', body: 'x' });
    const other = apiClient(gateway.url, (await makeApplication('other')).apiKey);
    const otherGrant = await makeAgentGrant(other);

    // Act / Assess
    for (const id of [UNKNOWN_TEMPLATE_ID, 'nonsense', 'sig_01jzzzzzzzzzzzzzzzzzzzzzzz', encodeURIComponent('tpl#x')]) {
      expectError(await api.get(`/v3/grants/${owner.id}/templates/${id}`), 404, 'not_found_error');
    }
    expectError(
      await api.get(`/v3/grants/${sibling.id}/templates/${template.id}`),
      404,
      'not_found_error',
      template.id,
    );
    expectError(await other.get(`/v3/grants/${owner.id}/templates/${template.id}`), 404, 'not_found_error');
    expectError(
      await other.get(`/v3/grants/${otherGrant.id}/templates/${template.id}`),
      404,
      'not_found_error',
      template.id,
    );
    expectError(
      await other.post(`/v3/grants/${otherGrant.id}/templates/${template.id}/render`, { variables: {} }),
      404,
      'not_found_error',
    );
    expectError(
      await other.put(`/v3/grants/${otherGrant.id}/templates/${template.id}`, { name: 'stolen' }),
      404,
      'not_found_error',
    );
    expectError(await other.delete(`/v3/grants/${otherGrant.id}/templates/${template.id}`), 404, 'not_found_error');
    // Nothing happened to the template.
    expect((await api.get(`/v3/grants/${owner.id}/templates/${template.id}`)).body.data.name).toBe('Private');
  });
});

describe('PUT /v3/grants/{grant_id}/templates/{template_id}', () => {
  it('updates the fields sent and keeps the others', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, {
      name: 'Old name',
      engine: 'mustache',
      subject: 'Hi {{name}}',
      body: '<p>{{name}}</p>',
    });

    // Act
    const renamed = await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, { name: 'New name' });
    const rewritten = await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, { body: '<b>{{name}}</b>' });

    // Assess
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toEqual({ ...template, name: 'New name', updated_at: expect.any(Number) });
    expect(renamed.body.data.updated_at).toBeGreaterThanOrEqual(template.updated_at);
    expect(rewritten.body.data).toMatchObject({
      name: 'New name',
      subject: 'Hi {{name}}',
      body: '<b>{{name}}</b>',
      engine: 'mustache',
      created_at: template.created_at,
    });
    expect((await api.get(`/v3/grants/${grant.id}/templates/${template.id}`)).body.data).toEqual(rewritten.body.data);
    const rendered = await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, {
      variables: { name: 'Ann' },
    });
    expect(rendered.body.data).toEqual({ subject: 'Hi Ann', body: '<b>Ann</b>' });
  });

  it('projects the answer with select', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, { name: 'A', engine: 'twig', body: 'x' });
    const response = await api.put(`/v3/grants/${grant.id}/templates/${template.id}?select=id,name`, { name: 'B' });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({ id: template.id, name: 'B' });
  });

  it.each(['mustache', 'handlebars', 'twig'] as const)(
    'answers 400 for a %s syntax error at update, changing nothing',
    async (engine) => {
      // Prepare
      const grant = await makeAgentGrant(api);
      const template = await createTemplate(api, grant.id, {
        name: 'Good',
        engine,
        subject: SOURCES[engine].subject,
        body: SOURCES[engine].body,
      });
      const { source, detail } = SYNTAX_ERRORS[engine];

      // Act
      const badBody = await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, {
        body: source,
        name: 'Renamed',
      });
      const badSubject = await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, { subject: source });

      // Assess
      expectError(badBody, 400, 'invalid_request_error', `'body' is not a valid ${engine} template`, detail);
      expectError(badSubject, 400, 'invalid_request_error', `'subject' is not a valid ${engine} template`, detail);
      expect((await api.get(`/v3/grants/${grant.id}/templates/${template.id}`)).body.data).toEqual(template);
    },
  );

  it('answers 400 when the new engine does not accept the stored text, and for an unknown engine', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, {
      name: 'Hb',
      engine: 'handlebars',
      body: '{{#if vip}}VIP{{/if}}',
    });
    const toTwig = await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, { engine: 'twig' });
    expectError(toTwig, 400, 'invalid_request_error', "'body' is not a valid twig template");
    const unknown = await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, { engine: 'jinja' });
    expectError(unknown, 400, 'invalid_request_error', "'engine'", 'mustache, handlebars, twig');
    expect((await api.get(`/v3/grants/${grant.id}/templates/${template.id}`)).body.data.engine).toBe('handlebars');
  });

  it("refuses twig's {% include %} at update", async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, { name: 'Tw', engine: 'twig', body: 'x' });
    const response = await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, {
      body: '{% include "other.twig" %}',
    });
    expectError(response, 400, 'invalid_request_error', "'{% include %}'");
    expect((await api.get(`/v3/grants/${grant.id}/templates/${template.id}`)).body.data.body).toBe('x');
  });

  it('rejects an empty body and unknown fields, and answers 404 for unknown templates', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, { name: 'T', engine: 'mustache', body: 'x' });
    expectError(
      await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, {}),
      400,
      'invalid_request_error',
      'at least one field',
    );
    expectError(
      await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, { colour: 'red' }),
      400,
      'invalid_request_error',
      "unknown field 'colour'",
    );
    expectError(
      await api.put(`/v3/grants/${grant.id}/templates/${UNKNOWN_TEMPLATE_ID}`, { name: 'x' }),
      404,
      'not_found_error',
    );
  });
});

describe('DELETE /v3/grants/{grant_id}/templates/{template_id}', () => {
  it('deletes the template for good', async () => {
    const grant = await makeAgentGrant(api);
    const keep = await createTemplate(api, grant.id, { name: 'keep', engine: 'mustache', body: 'k' });
    const template = await createTemplate(api, grant.id, { name: 'gone', engine: 'mustache', body: 'g' });

    const response = await api.delete(`/v3/grants/${grant.id}/templates/${template.id}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ request_id: response.headers.get('x-request-id') });

    expectError(await api.get(`/v3/grants/${grant.id}/templates/${template.id}`), 404, 'not_found_error');
    expectError(await api.delete(`/v3/grants/${grant.id}/templates/${template.id}`), 404, 'not_found_error');
    expectError(
      await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, { variables: {} }),
      404,
      'not_found_error',
    );
    expect((await api.get(`/v3/grants/${grant.id}/templates`)).body.data.map((t: { id: string }) => t.id)).toEqual([
      keep.id,
    ]);
  });
});

describe('POST /v3/grants/{grant_id}/templates/{template_id}/render', () => {
  it.each(['mustache', 'handlebars', 'twig'] as const)(
    'renders a %s subject unescaped and its body HTML-escaped',
    async (engine) => {
      // Prepare
      const grant = await makeAgentGrant(api);
      const template = await createTemplate(api, grant.id, { name: `${engine} greeting`, engine, ...SOURCES[engine] });
      const variables = { name: `<Tom & "Jerry's">`, team: { city: 'Oslo' } };

      // Act
      const response = await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, { variables });

      // Assess
      expect(response.status, response.text).toBe(200);
      expect(response.body.data).toEqual({
        subject: `Hi <Tom & "Jerry's"> from Oslo`,
        body: `<p>Dear &lt;Tom &amp; &quot;Jerry${APOSTROPHE[engine]}s&quot;&gt; of Oslo</p>`,
      });
    },
  );

  it.each(['mustache', 'handlebars', 'twig'] as const)(
    'renders %s with missing variables as empty, and requires the variables object',
    async (engine) => {
      const grant = await makeAgentGrant(api);
      const template = await createTemplate(api, grant.id, { name: 'Empty', engine, ...SOURCES[engine] });
      const expected = { subject: 'Hi  from ', body: '<p>Dear  of </p>' };
      expect(
        (await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, { variables: {} })).body.data,
      ).toEqual(expected);
      // As the published contract documents: `variables` is required.
      expectError(
        await api.request('POST', `/v3/grants/${grant.id}/templates/${template.id}/render`),
        400,
        'invalid_request_error',
        'A JSON request body is required',
      );
      expectError(
        await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, {}),
        400,
        'invalid_request_error',
        "'variables' is required",
      );
    },
  );

  it('keeps raw output raw when the author asks for it', async () => {
    const grant = await makeAgentGrant(api);
    const variables = { html: '<b>bold<br>' };
    const cases: [Engine, string][] = [
      ['mustache', '{{{html}}}|{{html}}'],
      ['handlebars', '{{{html}}}|{{html}}'],
      ['twig', '{{ html|raw }}|{{ html }}'],
    ];
    for (const [engine, body] of cases) {
      const template = await createTemplate(api, grant.id, { name: 'raw', engine, body });
      const response = await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, { variables });
      expect({ engine, body: response.body.data?.body }).toEqual({
        engine,
        body: '<b>bold<br>|&lt;b&gt;bold&lt;br&gt;',
      });
    }
  });

  it('rejects unknown fields and non-object variables', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, grant.id, { name: 'v', engine: 'mustache', body: 'x' });
    expectError(
      await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, { vars: {} }),
      400,
      'invalid_request_error',
      "unknown field 'vars'",
    );
    expectError(
      await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, { variables: 'x' }),
      400,
      'invalid_request_error',
      "'variables' must be of type object",
    );
  });

  it('answers 404 for an unknown template', async () => {
    const grant = await makeAgentGrant(api);
    expectError(
      await api.post(`/v3/grants/${grant.id}/templates/${UNKNOWN_TEMPLATE_ID}/render`, { variables: {} }),
      404,
      'not_found_error',
      UNKNOWN_TEMPLATE_ID,
    );
  });
});

describe('POST /v3/grants/{grant_id}/signatures', () => {
  it('creates a signature with every field of the Signature object', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.post(`/v3/grants/${grant.id}/signatures`, { name: 'Work', body: '<p>Ann, ACME</p>' });
    expect(response.status, response.text).toBe(201);
    expect(response.body.data).toEqual({
      id: expect.stringMatching(/^sig_[0-9a-z]{26}$/),
      object: 'signature',
      grant_id: grant.id,
      name: 'Work',
      body: '<p>Ann, ACME</p>',
      created_at: expect.any(Number),
      updated_at: response.body.data.created_at,
    });
  });

  it.each([
    [{ body: 'x' }, "'name' is required"],
    [{ name: 'n' }, "'body' is required"],
    [{ name: 'n', body: '' }, "'body' must not be empty"],
    [{ name: 'n', body: 'x', engine: 'twig' }, "unknown field 'engine'"],
  ])('rejects %j with 400 naming the field', async (body, message) => {
    const grant = await makeAgentGrant(api);
    expectError(await api.post(`/v3/grants/${grant.id}/signatures`, body), 400, 'invalid_request_error', message);
  });

  it('holds at most 10 signatures per grant (409 for the 11th)', async () => {
    const grant = await makeAgentGrant(api);
    for (let i = 0; i < 10; i++) await createSignature(api, grant.id, { name: `s${i}`, body: `b${i}` });
    expectError(
      await api.post(`/v3/grants/${grant.id}/signatures`, { name: 's10', body: 'b10' }),
      409,
      'conflict_error',
      '10 signatures',
    );
  });
});

describe('GET /v3/grants/{grant_id}/signatures', () => {
  it('lists newest first and pages with limit=1 and next_cursor', async () => {
    const grant = await makeAgentGrant(api);
    const created = [];
    for (const name of ['one', 'two', 'three'])
      created.push(await createSignature(api, grant.id, { name, body: `-- ${name}` }));
    const newestFirst = created.map((s) => s.id).reverse();

    const all = await api.get(`/v3/grants/${grant.id}/signatures`);
    expect(all.body.data.map((s: { id: string }) => s.id)).toEqual(newestFirst);
    expect(all.body).not.toHaveProperty('next_cursor');

    const first = await api.get(`/v3/grants/${grant.id}/signatures?limit=1`);
    expect(first.body.data.map((s: { id: string }) => s.id)).toEqual([newestFirst[0]]);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await api.get(
      `/v3/grants/${grant.id}/signatures?limit=1&page_token=${encodeURIComponent(first.body.next_cursor)}`,
    );
    expect(second.body.data.map((s: { id: string }) => s.id)).toEqual([newestFirst[1]]);
    const third = await api.get(
      `/v3/grants/${grant.id}/signatures?limit=1&page_token=${encodeURIComponent(second.body.next_cursor)}`,
    );
    expect(third.body.data.map((s: { id: string }) => s.id)).toEqual([newestFirst[2]]);
    expect(third.body).not.toHaveProperty('next_cursor');

    const selected = await api.get(`/v3/grants/${grant.id}/signatures?limit=1&select=id,body`);
    expect(selected.body.data).toEqual([{ id: newestFirst[0], body: '-- three' }]);
  });

  it('does not take a template cursor', async () => {
    const grant = await makeAgentGrant(api);
    await createTemplate(api, grant.id, { name: 'a', engine: 'mustache', body: 'a' });
    await createTemplate(api, grant.id, { name: 'b', engine: 'mustache', body: 'b' });
    const cursor = (await api.get(`/v3/grants/${grant.id}/templates?limit=1`)).body.next_cursor;
    expect(typeof cursor).toBe('string');
    expectError(
      await api.get(`/v3/grants/${grant.id}/signatures?page_token=${encodeURIComponent(cursor)}`),
      400,
      'invalid_request_error',
    );
  });
});

describe('GET, PUT and DELETE /v3/grants/{grant_id}/signatures/{signature_id}', () => {
  it('gets, updates (keeping fields not sent) and deletes a signature', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const signature = await createSignature(api, grant.id, { name: 'Home', body: '<p>Cheers</p>' });

    // Act / Assess: get
    const got = await api.get(`/v3/grants/${grant.id}/signatures/${signature.id}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data).toEqual(signature);
    expect((await api.get(`/v3/grants/${grant.id}/signatures/${signature.id}?select=name`)).body.data).toEqual({
      name: 'Home',
    });

    // update
    const updated = await api.put(`/v3/grants/${grant.id}/signatures/${signature.id}`, { body: '<p>Best</p>' });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data).toEqual({ ...signature, body: '<p>Best</p>', updated_at: expect.any(Number) });
    expect(updated.body.data.updated_at).toBeGreaterThanOrEqual(signature.updated_at);
    const renamed = await api.put(`/v3/grants/${grant.id}/signatures/${signature.id}?select=id,name,body`, {
      name: 'Office',
    });
    expect(renamed.body.data).toEqual({ id: signature.id, name: 'Office', body: '<p>Best</p>' });
    expectError(
      await api.put(`/v3/grants/${grant.id}/signatures/${signature.id}`, {}),
      400,
      'invalid_request_error',
      'at least one field',
    );
    expectError(
      await api.put(`/v3/grants/${grant.id}/signatures/${signature.id}`, { body: '' }),
      400,
      'invalid_request_error',
      "'body' must not be empty",
    );

    // delete
    const deleted = await api.delete(`/v3/grants/${grant.id}/signatures/${signature.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ request_id: deleted.headers.get('x-request-id') });
    expectError(await api.get(`/v3/grants/${grant.id}/signatures/${signature.id}`), 404, 'not_found_error');
    expectError(await api.delete(`/v3/grants/${grant.id}/signatures/${signature.id}`), 404, 'not_found_error');
    expectError(
      await api.put(`/v3/grants/${grant.id}/signatures/${signature.id}`, { name: 'x' }),
      404,
      'not_found_error',
    );
    expect((await api.get(`/v3/grants/${grant.id}/signatures`)).body.data).toEqual([]);
  });

  it('answers 404 for unknown IDs, IDs of another grant and grants of another application', async () => {
    const owner = await makeAgentGrant(api);
    const sibling = await makeAgentGrant(api);
    const signature = await createSignature(api, owner.id, { name: 'Mine', body: 'x' });
    const other = apiClient(gateway.url, (await makeApplication('other')).apiKey);
    const otherGrant = await makeAgentGrant(other);

    for (const id of [UNKNOWN_SIGNATURE_ID, UNKNOWN_TEMPLATE_ID, 'nonsense']) {
      expectError(await api.get(`/v3/grants/${owner.id}/signatures/${id}`), 404, 'not_found_error');
    }
    expectError(
      await api.get(`/v3/grants/${sibling.id}/signatures/${signature.id}`),
      404,
      'not_found_error',
      signature.id,
    );
    expectError(await api.delete(`/v3/grants/${sibling.id}/signatures/${signature.id}`), 404, 'not_found_error');
    expectError(await other.get(`/v3/grants/${owner.id}/signatures/${signature.id}`), 404, 'not_found_error');
    expectError(
      await other.get(`/v3/grants/${otherGrant.id}/signatures/${signature.id}`),
      404,
      'not_found_error',
      signature.id,
    );
    expectError(
      await other.put(`/v3/grants/${otherGrant.id}/signatures/${signature.id}`, { name: 'x' }),
      404,
      'not_found_error',
    );
    expectError(await other.delete(`/v3/grants/${otherGrant.id}/signatures/${signature.id}`), 404, 'not_found_error');
    expect((await api.get(`/v3/grants/${owner.id}/signatures/${signature.id}`)).body.data).toEqual(signature);
  });
});
