/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): Powertools' Tracer and the X-Ray SDK under it, loaded only where tracing is on (shared/aws/tracing.ts). */
export { Tracer } from '@aws-lambda-powertools/tracer';
