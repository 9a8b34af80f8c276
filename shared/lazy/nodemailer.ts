/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): nodemailer's SMTP transport, for shared/mail/transport.ts. */
export { createTransport } from 'nodemailer';
