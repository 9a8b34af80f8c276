/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): busboy, for shared/http/middleware/multipart.ts. */
export { default as Busboy } from '@fastify/busboy';
