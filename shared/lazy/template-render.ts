/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): template checking and rendering with the engines (handlebars, mustache, twig), for shared/templates/templates.ts. */
export { checkTemplate, renderTemplate } from '#shared/templates/render';
