/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): ical.js, the IANA zones' VTIMEZONE blocks and the Windows zone names, for shared/calendar/ical.ts. */
export { default as ICAL } from 'ical.js';
export { tzlib_get_ical_block, tzlib_get_timezones } from 'timezones-ical-library';
export { windowsZoneToIana } from '#shared/calendar/windows-zones';
