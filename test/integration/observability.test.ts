import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { apiClient } from '../support/api';
import { useApi } from '../support/harness';

/**
 * Logs and metrics of a request (shared/logger.ts, shared/metrics.ts: Powertools for AWS Lambda),
 * read from what the handlers write to stdout and stderr while the gateway of the tests invokes them
 * in this process, as Lambda would hand them to CloudWatch Logs: every log line is JSON with the
 * request's keys (request_id, application_id, grant_id) and no secret; every request emits one EMF
 * line with its route's Requests, ClientErrors, ServerErrors and Latency, which CloudWatch reads as
 * metrics of the namespace `Switchboard` with the dimensions service and route.
 */
const { gateway } = useApi();

let written: string[] = [];
beforeEach(() => {
  written = [];
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    vi.spyOn(stream, 'write').mockImplementation(((chunk: unknown, ...rest: unknown[]) => {
      if (typeof chunk === 'string') written.push(...chunk.split('\n').filter(Boolean));
      return write(chunk, ...rest);
    }) as typeof stream.write);
  }
});
afterEach(() => {
  vi.restoreAllMocks();
});

const jsonLines = () => written.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
const logLines = () => jsonLines().filter((l) => typeof l.level === 'string');
const metricLines = () => jsonLines().filter((l) => '_aws' in l);

describe('logs and metrics of a request', () => {
  it('writes JSON log lines with the request, application and grant as keys, and no secret', async () => {
    const app = await makeApplication('observability');
    const api = apiClient(gateway().url, app.apiKey);
    const grant = await makeAgentGrant(api);
    written = [];
    const answer = await api.get(`/v3/grants/${grant.id}`);
    expect(answer.status).toBe(200);
    const access = logLines().find((l) => l.message === 'request' && l.route === 'GET /v3/grants/{grant_id}');
    expect(access).toMatchObject({
      level: 'info',
      service: 'switchboard',
      request_id: answer.body.request_id,
      application_id: app.applicationId,
      grant_id: grant.id,
      status: 200,
    });
    expect(typeof access!.time).toBe('string');
    expect(typeof access!.duration_ms).toBe('number');
    for (const line of written) expect(line).not.toContain(app.apiKey);
  });

  it("emits the route's metrics as one EMF line per request: Requests, ClientErrors, ServerErrors, Latency", async () => {
    const app = await makeApplication('observability metrics');
    const api = apiClient(gateway().url, app.apiKey);
    written = [];
    expect((await api.get('/v3/grants?limit=1')).status).toBe(200);
    expect((await api.get('/v3/grants/grant_01jd6abcdefghjkmnpqrstvwxy')).status).toBe(404);

    const lines = metricLines();
    const listed = lines.find((l) => l.route === 'GET /v3/grants');
    const missing = lines.find((l) => l.route === 'GET /v3/grants/{grant_id}');
    expect(listed).toMatchObject({ service: 'switchboard', Requests: 1, ClientErrors: 0, ServerErrors: 0 });
    expect(missing).toMatchObject({ Requests: 1, ClientErrors: 1, ServerErrors: 0 });
    expect(typeof listed!.Latency).toBe('number');
    const emf = (
      listed!._aws as {
        CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
      }
    ).CloudWatchMetrics[0]!;
    expect(emf.Namespace).toBe('Switchboard');
    expect(emf.Dimensions).toEqual([['service', 'route']]);
    expect(emf.Metrics).toEqual(
      expect.arrayContaining([
        { Name: 'Requests', Unit: 'Count' },
        { Name: 'ClientErrors', Unit: 'Count' },
        { Name: 'ServerErrors', Unit: 'Count' },
        { Name: 'Latency', Unit: 'Milliseconds' },
      ]),
    );
  });

  it('keeps the keys of concurrent requests apart', async () => {
    const a = await makeApplication('observability a');
    const b = await makeApplication('observability b');
    const apiA = apiClient(gateway().url, a.apiKey);
    const apiB = apiClient(gateway().url, b.apiKey);
    written = [];
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? apiA : apiB).get('/v3/grants?limit=1')),
    );
    const byRequest = new Map(answers.map((r, i) => [r.body.request_id as string, i % 2 ? a : b]));
    const access = logLines().filter((l) => l.message === 'request' && byRequest.has(l.request_id as string));
    expect(access).toHaveLength(10);
    for (const line of access)
      expect(line.application_id).toBe(byRequest.get(line.request_id as string)!.applicationId);
  });
});
