import { inject } from 'vitest';
import { ARTIFACTS_ENV, captureLogs } from './secrets';

// Runs in each worker before any test module loads, so modules that read their configuration at
// load time (like Lambda cold starts) see the emulators.
Object.assign(process.env, inject('stackEnv'), {
  // The logger says everything; what it says goes to this worker's log file for the end-of-run secrets
  // scan (test/final/secrets-scan.test.ts), and to the terminal only from TEST_LOG_LEVEL up (none by default).
  LOG_LEVEL: 'debug',
  [ARTIFACTS_ENV]: inject('testArtifacts'),
  API_KEY_CACHE_SECONDS: '0',
  // Request rate limits far above what a test sends: the limiter runs on every request (its writes
  // are made), but refuses none. Tests send requests as fast as one process can, with one application
  // and one grant (bad-input-routes.fuzz.test.ts: hundreds a second to one grant, past the default 10
  // a second, 20 at once). test/integration/rate-limit.test.ts sets its own small limits.
  RATE_LIMIT_PER_SECOND: '1000000',
  RATE_LIMIT_BURST: '1000000',
  GRANT_RATE_LIMIT_PER_SECOND: '1000000',
  GRANT_RATE_LIMIT_BURST: '1000000',
  // Scheduled sends may be due 15 s ahead instead of 60 (explicit configuration; the path is the same).
  SCHEDULED_SEND_MIN_LEAD_SECONDS: '15',
});
captureLogs(inject('testArtifacts'), process.env.TEST_LOG_LEVEL ?? 'silent');
