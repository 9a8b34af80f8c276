import { smokeSuites } from './smoke';

/** The bench suites that must run alone (test/bench/smoke.ts says why). */
smokeSuites('alone');
