/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): imapflow's IMAP client, for shared/imap/connect.ts. */
export { ImapFlow } from 'imapflow';
