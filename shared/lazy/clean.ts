/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): sanitize-html and turndown, for shared/mail/clean.ts. */
export { default as sanitizeHtml } from 'sanitize-html';
export { default as TurndownService } from 'turndown';
