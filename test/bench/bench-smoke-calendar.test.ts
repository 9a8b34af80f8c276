import { smokeSuites } from './smoke';

/** The calendar, provider and scheduler bench suites at smoke size (test/bench/smoke.ts). */
smokeSuites('calendar');
