/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): rrule, for shared/calendar/recurrence.ts. */
import * as rrulePackage from 'rrule';

// The package's ESM build (bundles) has named exports only, its CJS build (Node's loader: tsx,
// vitest) a default object. Read through a plain object so that esbuild does not warn about the
// `default` the ESM build lacks.
const loaded: { RRule?: typeof import('rrule').RRule; default?: { RRule: typeof import('rrule').RRule } } =
  rrulePackage;
export const RRule = (loaded.RRule ?? loaded.default!.RRule) as typeof import('rrule').RRule;
