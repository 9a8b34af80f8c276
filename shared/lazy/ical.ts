/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): ical.js and the IANA zones' VTIMEZONE blocks, for shared/calendar/ical.ts. */
export { default as ICAL } from 'ical.js';
export { tzlib_get_ical_block, tzlib_get_timezones } from 'timezones-ical-library';
