/**
 * Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): nodemailer's address parser, for
 * shared/google/gmail-message.ts (the From, To… headers of provider A's messages). Only the
 * functions that read Gmail messages call it, and only then.
 */
export { default as addressparser } from 'nodemailer/lib/addressparser';
