/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): mailparser, for shared/mail/parse.ts. */
export { simpleParser } from 'mailparser';
