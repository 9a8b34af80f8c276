import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { jobsDone } from '../support/outbox-relay';
import { checkResponse, routeOf } from '../support/response-check';

/**
 * Application templates (`/v3/templates`): stored once per application, named by `atpl_` IDs, and
 * usable in a send or draft of every grant of that application, never of another application's.
 */
let gateway: Gateway;

beforeAll(async () => {
  gateway = await startGateway();
});

afterAll(async () => {
  await gateway?.close();
});

type Engine = 'mustache' | 'handlebars' | 'twig';
const ENGINES = ['mustache', 'handlebars', 'twig'] as const;

/** A well-formed application template ID that was never issued. */
const UNKNOWN_ID = 'atpl_01jzzzzzzzzzzzzzzzzzzzzzzz';

/** The same placeholders in each engine's syntax. */
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

const VARIABLES = { name: `<Tom & "Jerry's">`, team: { city: 'Oslo' } };
const escapedName = (engine: Engine) => `&lt;Tom &amp; &quot;Jerry${APOSTROPHE[engine]}s&quot;&gt;`;

interface Template {
  id: string;
  object: 'template';
  grant_id: null;
  app_id: string;
  engine: Engine;
  name: string;
  subject: string;
  body: string;
  created_at: number;
  updated_at: number;
}

/** A fresh application, its client and its ID: listings of a fresh application hold only what the test made. */
async function freshApplication(name = 'Application templates') {
  const app = await makeApplication(name);
  return { api: apiClient(gateway.url, app.apiKey), applicationId: app.applicationId };
}

async function createTemplate(client: ApiClient, body: Record<string, unknown>): Promise<Template> {
  const response = await client.post('/v3/templates', body);
  if (response.status !== 200) throw new Error(`createTemplate: ${response.status} ${response.text}`);
  return response.body.data as Template;
}

function expectError(response: ApiResponse, status: number, type: string, ...fragments: string[]) {
  expect(response.status, response.text).toBe(status);
  expect(response.body.error.type).toBe(type);
  expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
  for (const fragment of fragments) expect(response.body.error.message).toContain(fragment);
}

const listIds = async (client: ApiClient) =>
  ((await client.get('/v3/templates?limit=200')).body.data as Template[]).map((t) => t.id);

describe('POST /v3/templates', () => {
  it('creates an application template: app_id set, grant_id null, an atpl_ ID', async () => {
    // Prepare
    const { api, applicationId } = await freshApplication();

    // Act
    const response = await api.post('/v3/templates', {
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
      id: expect.stringMatching(/^atpl_[0-9a-z]{26}$/),
      object: 'template',
      grant_id: null,
      app_id: applicationId,
      engine: 'handlebars',
      name: 'Welcome',
      subject: 'Welcome {{name}}',
      body: '<p>Hello {{name}}</p>',
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expect(template.created_at).toBeGreaterThan(1_700_000_000);
    expect(template.updated_at).toBe(template.created_at);
    expect(await listIds(api)).toEqual([template.id]);
  });

  it('stores an empty subject when none is given', async () => {
    const { api } = await freshApplication();
    const template = await createTemplate(api, { name: 'No subject', engine: 'twig', body: 'x' });
    expect(template.subject).toBe('');
    expect((await api.get(`/v3/templates/${template.id}`)).body.data.subject).toBe('');
  });

  it('answers 400 naming the field, and stores nothing', async () => {
    // Prepare
    const { api } = await freshApplication();
    const cases: [Record<string, unknown>, string[]][] = [
      [{ name: 'n', engine: 'liquid', body: 'x' }, ["'engine'", 'mustache', 'handlebars', 'twig']],
      [{ name: 'n', engine: 'nunjucks', body: 'x' }, ["'engine'"]],
      [{ name: 'n', body: 'x' }, ["'engine' is required"]],
      [{ engine: 'mustache', body: 'x' }, ["'name' is required"]],
      [{ name: 'n', engine: 'mustache' }, ["'body' is required"]],
      [{ name: '', engine: 'mustache', body: 'x' }, ["'name'"]],
      [{ name: 'n', engine: 'mustache', body: 'x', grant_id: 'grant_x' }, ["unknown field 'grant_id'"]],
      [{ name: 'n', engine: 'mustache', body: 7 }, ["'body' must be of type string"]],
    ];

    // Act / Assess
    for (const [body, fragments] of cases) {
      expectError(await api.post('/v3/templates', body), 400, 'invalid_request_error', ...fragments);
    }
    expect(await listIds(api)).toEqual([]);
  });

  it.each(ENGINES)("refuses a %s syntax error with 400 naming the field and the engine's message", async (engine) => {
    const { api } = await freshApplication();
    const { source, detail } = SYNTAX_ERRORS[engine];
    expectError(
      await api.post('/v3/templates', { name: 'Broken', engine, body: source }),
      400,
      'invalid_request_error',
      "'body'",
      engine,
      detail,
    );
    expectError(
      await api.post('/v3/templates', { name: 'Broken', engine, subject: source, body: 'fine' }),
      400,
      'invalid_request_error',
      "'subject'",
      detail,
    );
    expect(await listIds(api)).toEqual([]);
  });

  it("refuses partials and twig's {% include %} as the grant's templates do", async () => {
    const { api } = await freshApplication();
    expectError(
      await api.post('/v3/templates', { name: 'p', engine: 'mustache', body: 'Hi {{> footer}}' }),
      400,
      'invalid_request_error',
      'partials are not supported',
    );
    expectError(
      await api.post('/v3/templates', { name: 'i', engine: 'twig', body: "{% include 'x.twig' %}" }),
      400,
      'invalid_request_error',
      "'body'",
    );
    expect(await listIds(api)).toEqual([]);
  });
});

describe('GET /v3/templates', () => {
  it('lists newest first and pages with limit=1 and next_cursor', async () => {
    // Prepare
    const { api } = await freshApplication();
    const created: Template[] = [];
    for (const name of ['first', 'second', 'third'])
      created.push(await createTemplate(api, { name, engine: 'mustache', body: name }));
    const newestFirst = created.map((t) => t.id).reverse();

    // Act
    const all = await api.get('/v3/templates');
    const pages: string[][] = [];
    let cursor: string | undefined;
    let last: ApiResponse | undefined;
    do {
      last = await api.get(`/v3/templates?limit=1${cursor ? `&page_token=${encodeURIComponent(cursor)}` : ''}`);
      expect(last.status, last.text).toBe(200);
      pages.push(last.body.data.map((t: Template) => t.id));
      cursor = last.body.next_cursor;
    } while (cursor && pages.length < 10);

    // Assess
    expect(all.body.data.map((t: Template) => t.id)).toEqual(newestFirst);
    expect(all.body).not.toHaveProperty('next_cursor');
    expect(all.body.data[0]).toMatchObject({ object: 'template', name: 'third', grant_id: null });
    expect(pages).toEqual(newestFirst.map((id) => [id]));
    expect(last.body).not.toHaveProperty('next_cursor');
    const exact = await api.get('/v3/templates?limit=3');
    expect(exact.body.data).toHaveLength(3);
    expect(exact.body).not.toHaveProperty('next_cursor');
  });

  it("lists only the calling application's templates, never its grants' templates", async () => {
    // Prepare
    const { api } = await freshApplication();
    const other = await freshApplication('other');
    const grant = await makeAgentGrant(api);
    const mine = await createTemplate(api, { name: 'mine', engine: 'twig', body: 'x' });
    await createTemplate(other.api, { name: 'theirs', engine: 'twig', body: 'y' });
    const grantTemplate = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: 'grant-level',
      engine: 'twig',
      body: 'z',
    });
    expect(grantTemplate.status, grantTemplate.text).toBe(200);

    // Act / Assess
    expect(await listIds(api)).toEqual([mine.id]);
    expect((await api.get(`/v3/grants/${grant.id}/templates`)).body.data.map((t: { id: string }) => t.id)).toEqual([
      grantTemplate.body.data.id,
    ]);
  });

  it('projects fields with select and rejects bad list parameters', async () => {
    // Prepare
    const { api } = await freshApplication();
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, { name: 'Sel', engine: 'mustache', body: 'x' });
    await api.post(`/v3/grants/${grant.id}/templates`, { name: 'g1', engine: 'mustache', body: 'x' });
    await api.post(`/v3/grants/${grant.id}/templates`, { name: 'g2', engine: 'mustache', body: 'x' });
    const grantCursor = (await api.get(`/v3/grants/${grant.id}/templates?limit=1`)).body.next_cursor as string;
    expect(grantCursor).toEqual(expect.any(String));

    // Act
    const selected = await api.get('/v3/templates?select=id,name,app_id');

    // Assess
    expect(selected.status, selected.text).toBe(200);
    expect(selected.body.data).toEqual([{ id: template.id, name: 'Sel', app_id: template.app_id }]);
    for (const query of [
      'limit=0',
      'limit=-1',
      'page_token=garbage',
      `page_token=${encodeURIComponent(grantCursor)}`,
      'colour=red',
      'select=id,colour',
    ]) {
      const response = await api.get(`/v3/templates?${query}`);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
      expect(response.body.error.type).toBe('invalid_request_error');
    }
  });
});

describe('GET /v3/templates/{template_id}', () => {
  it('returns the template, and only the selected fields with select', async () => {
    const { api } = await freshApplication();
    const template = await createTemplate(api, {
      name: 'Get me',
      engine: 'twig',
      subject: 'S {{ a }}',
      body: 'B {{ b }}',
    });

    const response = await api.get(`/v3/templates/${template.id}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual(template);

    const selected = await api.get(`/v3/templates/${template.id}?select=id,engine,subject`);
    expect(selected.status, selected.text).toBe(200);
    expect(selected.body.data).toEqual({ id: template.id, engine: 'twig', subject: 'S {{ a }}' });
    expectError(await api.get(`/v3/templates/${template.id}?select=id,colour`), 400, 'invalid_request_error', 'colour');
  });

  it("answers 404 for unknown IDs, a grant's template ID and another application's template", async () => {
    // Prepare
    const { api } = await freshApplication();
    const other = await freshApplication('other');
    const grant = await makeAgentGrant(api);
    const grantTemplate = await api.post(`/v3/grants/${grant.id}/templates`, { name: 'g', engine: 'twig', body: 'x' });
    const theirs = await createTemplate(other.api, { name: 'Private', engine: 'mustache', body: 'x' });

    // Act / Assess
    for (const id of [UNKNOWN_ID, 'nonsense', grantTemplate.body.data.id, encodeURIComponent('atpl#x')]) {
      expectError(await api.get(`/v3/templates/${id}`), 404, 'not_found_error', 'Template');
    }
    expectError(await api.get(`/v3/templates/${theirs.id}`), 404, 'not_found_error', `Template '${theirs.id}'`);
    expectError(await api.put(`/v3/templates/${theirs.id}`, { name: 'stolen' }), 404, 'not_found_error', theirs.id);
    expectError(await api.delete(`/v3/templates/${theirs.id}`), 404, 'not_found_error', theirs.id);
    expectError(
      await api.post(`/v3/templates/${theirs.id}/render`, { variables: {} }),
      404,
      'not_found_error',
      theirs.id,
    );
    // Nothing happened to it.
    expect((await other.api.get(`/v3/templates/${theirs.id}`)).body.data).toEqual(theirs);
  });
});

describe('PUT /v3/templates/{template_id}', () => {
  it('updates the fields sent and keeps the others', async () => {
    // Prepare
    const { api } = await freshApplication();
    const template = await createTemplate(api, {
      name: 'Before',
      engine: 'mustache',
      subject: 'Old {{x}}',
      body: 'Old body {{x}}',
    });

    // Act
    const response = await api.put(`/v3/templates/${template.id}`, { name: 'After', body: 'New {{x}}' });

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({
      ...template,
      name: 'After',
      body: 'New {{x}}',
      updated_at: expect.any(Number),
    });
    expect(response.body.data.updated_at).toBeGreaterThanOrEqual(template.updated_at);
    expect((await api.get(`/v3/templates/${template.id}`)).body.data).toEqual(response.body.data);
    const selected = await api.put(`/v3/templates/${template.id}?select=id,name`, { engine: 'handlebars' });
    expect(selected.body.data).toEqual({ id: template.id, name: 'After' });
    expect((await api.get(`/v3/templates/${template.id}`)).body.data.engine).toBe('handlebars');
  });

  it('answers 400 when the new engine does not accept the stored text, and for bad fields; nothing changes', async () => {
    // Prepare
    const { api } = await freshApplication();
    const template = await createTemplate(api, { name: 'Twig', engine: 'twig', body: "{{ 'x'|upper }}" });

    // Act / Assess
    expectError(
      await api.put(`/v3/templates/${template.id}`, { engine: 'mustache', body: 'Hello {{name' }),
      400,
      'invalid_request_error',
      "'body'",
      'mustache',
    );
    expectError(
      await api.put(`/v3/templates/${template.id}`, { engine: 'handlebars' }),
      400,
      'invalid_request_error',
      "'body'",
      'handlebars',
    );
    expectError(
      await api.put(`/v3/templates/${template.id}`, { engine: 'liquid' }),
      400,
      'invalid_request_error',
      "'engine'",
    );
    expectError(await api.put(`/v3/templates/${template.id}`, {}), 400, 'invalid_request_error');
    expectError(
      await api.put(`/v3/templates/${template.id}`, { app_id: 'app_x' }),
      400,
      'invalid_request_error',
      "unknown field 'app_id'",
    );
    expectError(await api.put(`/v3/templates/${UNKNOWN_ID}`, { name: 'x' }), 404, 'not_found_error', UNKNOWN_ID);
    expect((await api.get(`/v3/templates/${template.id}`)).body.data).toEqual(template);
  });
});

describe('DELETE /v3/templates/{template_id}', () => {
  it('deletes the template for good', async () => {
    const { api } = await freshApplication();
    const kept = await createTemplate(api, { name: 'Kept', engine: 'mustache', body: 'k' });
    const template = await createTemplate(api, { name: 'Gone', engine: 'mustache', body: 'x' });

    const response = await api.delete(`/v3/templates/${template.id}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ request_id: response.headers.get('x-request-id') });

    expectError(await api.get(`/v3/templates/${template.id}`), 404, 'not_found_error', template.id);
    expectError(await api.delete(`/v3/templates/${template.id}`), 404, 'not_found_error', template.id);
    expect(await listIds(api)).toEqual([kept.id]);
  });
});

describe('POST /v3/templates/{template_id}/render', () => {
  it.each(ENGINES)('renders a %s subject unescaped and its body HTML-escaped', async (engine) => {
    // Prepare
    const { api } = await freshApplication();
    const template = await createTemplate(api, { name: `${engine} greeting`, engine, ...SOURCES[engine] });

    // Act
    const response = await api.post(`/v3/templates/${template.id}/render`, { variables: VARIABLES });

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({
      subject: `Hi <Tom & "Jerry's"> from Oslo`,
      body: `<p>Dear ${escapedName(engine)} of Oslo</p>`,
    });
  });

  it('renders missing variables as empty and a template without a subject with an empty one', async () => {
    const { api } = await freshApplication();
    const template = await createTemplate(api, { name: 'Empty', engine: 'twig', ...SOURCES.twig });
    const bodyOnly = await createTemplate(api, { name: 'Body only', engine: 'mustache', body: 'Only {{x}}' });
    expect((await api.post(`/v3/templates/${template.id}/render`, { variables: {} })).body.data).toEqual({
      subject: 'Hi  from ',
      body: '<p>Dear  of </p>',
    });
    expect((await api.post(`/v3/templates/${bodyOnly.id}/render`, { variables: { x: 1 } })).body.data).toEqual({
      subject: '',
      body: 'Only 1',
    });
  });

  it('answers 400 naming the field for missing, non-object and unknown fields', async () => {
    const { api } = await freshApplication();
    const template = await createTemplate(api, { name: 'v', engine: 'mustache', body: 'x' });
    expectError(
      await api.request('POST', `/v3/templates/${template.id}/render`),
      400,
      'invalid_request_error',
      'A JSON request body is required',
    );
    expectError(
      await api.post(`/v3/templates/${template.id}/render`, {}),
      400,
      'invalid_request_error',
      "'variables' is required",
    );
    expectError(
      await api.post(`/v3/templates/${template.id}/render`, { variables: 'x' }),
      400,
      'invalid_request_error',
      "'variables' must be of type object",
    );
    expectError(
      await api.post(`/v3/templates/${template.id}/render`, { variables: {}, strict: 'yes' }),
      400,
      'invalid_request_error',
      "'strict' must be of type boolean",
    );
  });

  it('with strict, answers 400 naming a variable the template names and the request lacks', async () => {
    const { api } = await freshApplication();
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, { name: 'Strict', engine: 'twig', ...SOURCES.twig });
    const inline = { engine: 'mustache', body: 'Only {{x}}', variables: {}, strict: true };
    for (const response of [
      await api.post(`/v3/templates/${template.id}/render`, { variables: {}, strict: true }),
      await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, { variables: {}, strict: true }),
      await api.post('/v3/templates/render', inline),
      await api.post(`/v3/grants/${grant.id}/templates/render`, inline),
    ])
      expectError(response, 400, 'invalid_request_error', 'could not be rendered');
    const strictOff = await api.post(`/v3/templates/${template.id}/render`, { variables: {}, strict: false });
    expect(strictOff.body.data).toEqual({ subject: 'Hi  from ', body: '<p>Dear  of </p>' });
    // A send naming the template with strict sends nothing.
    const sent = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: 'someone@example.net' }],
      template: { id: template.id, variables: {}, strict: true },
    });
    expectError(sent, 400, 'invalid_request_error', "'subject' could not be rendered with twig");
  });
});

describe('POST /v3/templates/render and POST /v3/grants/{grant_id}/templates/render', () => {
  it.each(ENGINES)('render a %s body given inline, HTML-escaped, and store nothing', async (engine) => {
    // Prepare
    const { api } = await freshApplication();
    const grant = await makeAgentGrant(api);
    const request = { engine, body: SOURCES[engine].body, variables: VARIABLES };

    // Act
    const application = await api.post('/v3/templates/render', request);
    const ofGrant = await api.post(`/v3/grants/${grant.id}/templates/render`, request);

    // Assess
    for (const response of [application, ofGrant]) {
      expect(response.status, response.text).toBe(200);
      expect(response.body.data).toEqual({ body: `<p>Dear ${escapedName(engine)} of Oslo</p>` });
    }
    expect(await listIds(api)).toEqual([]);
    expect((await api.get(`/v3/grants/${grant.id}/templates`)).body.data).toEqual([]);
  });

  it('answers 400 naming the field, on both paths', async () => {
    const { api } = await freshApplication();
    const grant = await makeAgentGrant(api);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ body: 'x', variables: {} }, ["'engine' is required"]],
      [{ engine: 'mustache', variables: {} }, ["'body' is required"]],
      [{ engine: 'mustache', body: 'x' }, ["'variables' is required"]],
      [{ engine: 'nunjucks', body: 'x', variables: {} }, ["'engine'", 'mustache', 'handlebars', 'twig']],
      [{ engine: 'mustache', body: 'x', variables: [] }, ["'variables' must be of type object"]],
      [{ engine: 'mustache', body: 'x', subject: 'y', variables: {} }, ["unknown field 'subject'"]],
      [
        { engine: 'handlebars', body: 'Hello {{name', variables: {} },
        ["'body'", 'handlebars', 'Parse error on line 1'],
      ],
      [{ engine: 'mustache', body: 'Hi {{> footer}}', variables: {} }, ['partials are not supported']],
    ];
    for (const path of ['/v3/templates/render', `/v3/grants/${grant.id}/templates/render`]) {
      for (const [body, fragments] of cases) {
        expectError(await api.post(path, body), 400, 'invalid_request_error', ...fragments);
      }
    }
  });

  it("answers 404 for a grant of another application on the grant's path", async () => {
    const { api } = await freshApplication();
    const other = await freshApplication('other');
    const theirGrant = await makeAgentGrant(other.api);
    const response = await api.post(`/v3/grants/${theirGrant.id}/templates/render`, {
      engine: 'mustache',
      body: 'x',
      variables: {},
    });
    expectError(response, 404, 'not_found_error');
  });
});

describe('application templates in the sends and drafts of its grants', () => {
  it('renders into a send of every grant of the application; explicit fields win', async () => {
    // Prepare
    const { api } = await freshApplication();
    const [alice, carol, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api), makeAgentGrant(api)]);
    const template = await createTemplate(api, {
      name: 'Shared',
      engine: 'handlebars',
      subject: 'Hi {{name}}',
      body: '<p>Dear {{name}}, from {{team.city}}</p>',
    });

    // Act
    const fromAlice = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: bob.email }],
      template: { id: template.id, variables: { name: 'Bob & Co', team: { city: 'Oslo' } } },
    });
    const fromCarol = await api.post(`/v3/grants/${carol.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: 'Explicit subject',
      template: { id: template.id, variables: { name: 'Bob' } },
    });
    await jobsDone();

    // Assess
    expect(fromAlice.status, fromAlice.text).toBe(200);
    expect(fromAlice.body.data).toMatchObject({ subject: 'Hi Bob & Co', body: '<p>Dear Bob &amp; Co, from Oslo</p>' });
    expect(fromCarol.status, fromCarol.text).toBe(200);
    expect(fromCarol.body.data).toMatchObject({ subject: 'Explicit subject', body: '<p>Dear Bob, from </p>' });
    const received = (await api.get(`/v3/grants/${bob.id}/messages`)).body.data as { subject: string }[];
    expect(received.map((m) => m.subject).sort()).toEqual(['Explicit subject', 'Hi Bob & Co']);
  });

  it('renders into a draft of a grant, and again when the draft is updated', async () => {
    // Prepare
    const { api } = await freshApplication();
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, {
      name: 'Invite',
      engine: 'twig',
      subject: 'Invitation for {{ name }}',
      body: '<p>Join us in {{ city }}, {{ name }}</p>',
    });
    const variables = { name: 'Ann & Co', city: 'Oslo' };

    // Act
    const created = await api.post(`/v3/grants/${grant.id}/drafts`, { template: { id: template.id, variables } });
    const updated = await api.put(`/v3/grants/${grant.id}/drafts/${created.body.data.id}`, {
      body: '<p>Kept body</p>',
      template: { id: template.id, variables: { name: 'Bob' } },
    });

    // Assess
    expect(created.status, created.text).toBe(200);
    expect(created.body.data).toMatchObject({
      subject: 'Invitation for Ann & Co',
      body: '<p>Join us in Oslo, Ann &amp; Co</p>',
      template: { id: template.id, variables },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data).toMatchObject({ subject: 'Invitation for Bob', body: '<p>Kept body</p>' });
  });

  it("renders through a grant's render path, but is not one of the grant's own templates", async () => {
    const { api } = await freshApplication();
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, {
      name: 'Shared',
      engine: 'mustache',
      subject: 'S {{a}}',
      body: 'B {{a}}',
    });
    const rendered = await api.post(`/v3/grants/${grant.id}/templates/${template.id}/render`, {
      variables: { a: 'x' },
    });
    expect(rendered.status, rendered.text).toBe(200);
    expect(rendered.body.data).toEqual({ subject: 'S x', body: 'B x' });
    expectError(await api.get(`/v3/grants/${grant.id}/templates/${template.id}`), 404, 'not_found_error', template.id);
    expectError(
      await api.put(`/v3/grants/${grant.id}/templates/${template.id}`, { name: 'x' }),
      404,
      'not_found_error',
    );
    expectError(await api.delete(`/v3/grants/${grant.id}/templates/${template.id}`), 404, 'not_found_error');
    expect((await api.get(`/v3/templates/${template.id}`)).body.data.name).toBe('Shared');
  });

  it("answers 404 for another application's template in a send, a draft and a grant's render; nothing is sent or stored", async () => {
    // Prepare
    const { api } = await freshApplication();
    const other = await freshApplication('other');
    const theirs = await createTemplate(other.api, { name: 'Private', engine: 'mustache', subject: 'S', body: 'B' });
    const [grant, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);

    // Act / Assess
    expectError(
      await api.post(`/v3/grants/${grant.id}/messages/send`, {
        to: [{ email: bob.email }],
        template: { id: theirs.id, variables: {} },
      }),
      404,
      'not_found_error',
      `Template '${theirs.id}' not found`,
    );
    expectError(
      await api.post(`/v3/grants/${grant.id}/drafts`, { template: { id: theirs.id } }),
      404,
      'not_found_error',
      theirs.id,
    );
    expectError(
      await api.post(`/v3/grants/${grant.id}/templates/${theirs.id}/render`, { variables: {} }),
      404,
      'not_found_error',
      theirs.id,
    );
    expectError(
      await api.post(`/v3/grants/${grant.id}/messages/send`, {
        to: [{ email: bob.email }],
        template: { id: UNKNOWN_ID },
      }),
      404,
      'not_found_error',
      UNKNOWN_ID,
    );
    // The sentinel: a send that is accepted shows in both mailboxes, the refused ones never did.
    const sentinel = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: bob.email }],
      subject: 'Sentinel',
      body: 'x',
    });
    expect(sentinel.status, sentinel.text).toBe(200);
    await jobsDone();
    for (const mailbox of [grant.id, bob.id]) {
      const messages = (await api.get(`/v3/grants/${mailbox}/messages`)).body.data as { subject: string }[];
      expect(messages.map((m) => m.subject)).toEqual(['Sentinel']);
    }
    expect((await api.get(`/v3/grants/${grant.id}/drafts`)).body.data).toEqual([]);
  });
});

describe("conformance with the contract's response schemas", () => {
  it("every operation's answer matches its route's response schema, and a departure from it is caught", async () => {
    // Prepare
    const { api } = await freshApplication();
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(api, { name: 'Conform', engine: 'mustache', body: 'B {{a}}' });
    const answers: [string, string, ApiResponse][] = [
      ['GET', '/v3/templates', await api.get('/v3/templates')],
      ['POST', '/v3/templates', await api.post('/v3/templates', { name: 'n', engine: 'twig', body: 'x' })],
      ['GET', `/v3/templates/${template.id}`, await api.get(`/v3/templates/${template.id}`)],
      ['PUT', `/v3/templates/${template.id}`, await api.put(`/v3/templates/${template.id}`, { name: 'Conformed' })],
      [
        'POST',
        `/v3/templates/${template.id}/render`,
        await api.post(`/v3/templates/${template.id}/render`, { variables: { a: 1 } }),
      ],
      [
        'POST',
        '/v3/templates/render',
        await api.post('/v3/templates/render', { engine: 'mustache', body: 'x', variables: {} }),
      ],
      [
        'POST',
        `/v3/grants/${grant.id}/templates/render`,
        await api.post(`/v3/grants/${grant.id}/templates/render`, { engine: 'twig', body: 'x', variables: {} }),
      ],
      ['DELETE', `/v3/templates/${template.id}`, await api.delete(`/v3/templates/${template.id}`)],
    ];

    // Assess
    for (const [method, path, response] of answers) {
      expect(response.status, `${method} ${path}: ${response.text}`).toBe(200);
      expect(routeOf(method, path)?.path, `${method} ${path}`).toMatch(
        /^\/v3\/(templates|grants\/\{grant_id\}\/templates)/,
      );
      expect(checkResponse(method, path, new URLSearchParams(), 200, response.body), `${method} ${path}`).toEqual([]);
    }
    // The check can fail: an application template needs `app_id` and a null `grant_id`, a render its subject.
    const [, , created] = answers[1]!;
    expect(
      checkResponse('POST', '/v3/templates', new URLSearchParams(), 200, {
        ...created.body,
        data: { ...created.body.data, grant_id: grant.id },
      }),
    ).not.toEqual([]);
    expect(
      checkResponse('POST', `/v3/templates/${template.id}/render`, new URLSearchParams(), 200, {
        request_id: 'req_x',
        data: { body: 'B 1' },
      }),
    ).not.toEqual([]);
  });
});
