import { afterAll, afterEach, expect } from 'vitest';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';

/**
 * Provider A's and B's fakes for a file whose tests use both: started by `start()` (beside the file's
 * other set-up), closed after the file; after each test, neither may have been sent a request, or
 * have given an answer, that its provider's published description does not allow.
 */
export function liveFakes(): { start(): Promise<{ google: GoogleFake; graph: GraphFake }> } {
  let started: { google: GoogleFake; graph: GraphFake } | undefined;
  afterEach(() => {
    if (!started) return;
    expect(started.google.requestViolations).toEqual([]);
    expect(started.google.responseViolations).toEqual([]);
    expect(started.graph.violations()).toEqual([]);
  });
  afterAll(async () => {
    await Promise.all([started?.google.close(), started?.graph.close()]);
  });
  return {
    async start() {
      const [google, graph] = await Promise.all([startGoogleFake(), startGraphFake()]);
      started = { google, graph };
      return started;
    },
  };
}
