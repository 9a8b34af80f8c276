'use strict';
const { readFile } = require('node:fs/promises');

/**
 * esbuild plugins for the function bundles (serverless.yml → custom.esbuild.plugins; the bench's
 * SDK reference bundle uses the same list).
 *
 * without-event-streams: the AWS SDK loads its event-stream codec with a dynamic
 * `import("@smithy/core/event-streams")`, needed only by streaming operations (S3 SelectObjectContent,
 * Bedrock, Transcribe…). Switchboard calls none of them, yet a single-file bundle would inline the
 * codec (~15 KB minified) into every function. The import resolves instead to a module that throws
 * a clear error if a streaming operation is ever added without revisiting this choice.
 *
 * lazy-web-streams: @middy/core imports `ReadableStream` from `node:stream/web` at load time for its
 * response-streaming mode (streamifyResponse), which Switchboard does not use; loading Node's web
 * streams costs ~4 ms of every cold start. The import resolves instead to a module whose
 * `ReadableStream` is a getter for the global of the same name (the very same class since Node 18),
 * so nothing changes if streaming is ever used, and nothing is loaded until then.
 *
 * lazy-ini-files: the SDK's shared config file loader (~/.aws/config and credentials, SSO token
 * files) imports `readFile` from `node:fs/promises` at load time, which also loads Node's readline
 * (~1 ms of every cold start). In Lambda those files are never read (credentials and region come from
 * the environment), so the import resolves to a `readFile` that loads `node:fs/promises` on its first
 * call. Should the SDK import anything else from there, the build fails instead of the function.
 *
 * literal-schema-keys: each AWS SDK client describes its operations as data (dist-es/schemas/
 * schemas_0.js), objects whose keys are computed from string constants of the same file
 * (`{ [_h]: ["GET", "/{Key+}", 200] }` with `const _h = "http"`). esbuild inlines only short
 * constants, and a computed key it cannot see is a string may run code (toString), so it keeps every
 * schema of the service whether an operation uses it or not: ~60 KB of S3's, in every function that
 * reads or writes S3. Each `[name]:` whose name is one of those string constants becomes the literal
 * key itself (`"http":`): the same property, and unused schemas are left out of the bundle.
 */
const withoutEventStreams = {
  name: 'without-event-streams',
  setup(build) {
    build.onResolve({ filter: /^@smithy\/core\/event-streams$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, namespace: 'without-event-streams' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'without-event-streams' }, () => ({
      contents:
        "throw new Error('AWS SDK event streams are not bundled in Switchboard functions (scripts/esbuild-plugins.cjs)');",
      loader: 'js',
    }));
  },
};

const lazyWebStreams = {
  name: 'lazy-web-streams',
  setup(build) {
    build.onResolve({ filter: /^node:stream\/web$/ }, (args) =>
      /[\\/]@middy[\\/]core[\\/]/.test(args.importer) ? { path: args.path, namespace: 'lazy-web-streams' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-web-streams' }, () => ({
      contents: "Object.defineProperty(exports, 'ReadableStream', { enumerable: true, get: () => globalThis.ReadableStream });",
      loader: 'js',
    }));
  },
};

const lazyIniFiles = {
  name: 'lazy-ini-files',
  setup(build) {
    build.onResolve({ filter: /^node:fs\/promises$/ }, (args) =>
      /[\\/]shared-ini-file-loader[\\/]/.test(args.importer) ? { path: args.path, namespace: 'lazy-ini-files' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-ini-files' }, () => ({
      contents: [
        'let fsPromises;',
        "export const readFile = (...args) => (fsPromises ??= import('node:fs/promises')).then((fs) => fs.readFile(...args));",
      ].join('\n'),
      loader: 'js',
    }));
  },
};

const STRING_CONSTANT = /^const (\w+) = ("(?:[^"\\\n]|\\.)*");$/gm;

const literalSchemaKeys = {
  name: 'literal-schema-keys',
  setup(build) {
    build.onLoad({ filter: /[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]dist-es[\\/]schemas[\\/]schemas_\d+\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      // A literal `"__proto__":` would set the prototype where the computed key defines a property.
      const strings = new Map([...source.matchAll(STRING_CONSTANT)].filter(([, , literal]) => literal !== '"__proto__"').map(([, name, literal]) => [name, literal]));
      return { contents: source.replace(/\[(\w+)\]:/g, (key, name) => (strings.has(name) ? `${strings.get(name)}:` : key)), loader: 'js' };
    });
  },
};

module.exports = [withoutEventStreams, lazyWebStreams, lazyIniFiles, literalSchemaKeys];
