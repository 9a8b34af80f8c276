/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): the template engines, for shared/templates/render.ts. */
export { default as Handlebars } from 'handlebars';
export { default as Mustache } from 'mustache';
export { default as Twig } from 'twig';
