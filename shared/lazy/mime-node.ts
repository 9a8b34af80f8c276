/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): nodemailer's MIME node, for shared/uploads/mime.ts. */
export { default as MimeNode } from 'nodemailer/lib/mime-node';
