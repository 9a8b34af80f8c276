/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): nodemailer's MIME composer, for shared/mail/compose.ts. */
export { default as MailComposer } from 'nodemailer/lib/mail-composer';
