import { smokeSuites } from './smoke';

/** The mail bench suites at smoke size (test/bench/smoke.ts). */
smokeSuites('mail');
