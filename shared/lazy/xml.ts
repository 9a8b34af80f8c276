/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): fast-xml-parser, for shared/dav/xml.ts (CalDAV and CardDAV answers). */
export { XMLParser, XMLValidator } from 'fast-xml-parser';
