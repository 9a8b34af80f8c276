import { inject } from 'vitest';

// Runs in each worker before any test module loads, so modules that read their configuration at
// load time (like Lambda cold starts) see the emulators.
Object.assign(process.env, inject('stackEnv'), {
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  API_KEY_CACHE_SECONDS: '0',
  // Scheduled sends may be due 15 s ahead instead of 60 (explicit configuration; the path is the same).
  SCHEDULED_SEND_MIN_LEAD_SECONDS: '15',
});
