'use strict';
const { mkdir, readFile, writeFile } = require('node:fs/promises');
const { dirname, join, resolve } = require('node:path');

/**
 * esbuild plugins for the function bundles (serverless.yml → custom.esbuild.plugins; the bench's
 * SDK reference bundle uses the same list).
 *
 * without-event-streams: the AWS SDK loads its event-stream codec with a dynamic
 * `import("@smithy/core/event-streams")`, needed only by streaming operations (S3 SelectObjectContent,
 * Bedrock, Transcribe…). Switchboard calls none of them, yet a single-file bundle would inline the
 * codec (~15 KB minified) into every function. The import resolves instead to a module that throws
 * a clear error if a streaming operation is ever added without revisiting this choice. The S3
 * client also imports two names of it statically, to set up its (unused) event-stream marshaller at
 * construction: those resolve to a marshaller whose methods throw the same error (~9 KB less in every
 * function that reads or writes S3). Should a client import any other name, the build fails.
 *
 * lazy-web-streams: @middy/core imports `ReadableStream` from `node:stream/web` at load time for its
 * response-streaming mode (streamifyResponse), which Switchboard does not use; loading Node's web
 * streams costs ~4 ms of every cold start. The import resolves instead to a module whose
 * `ReadableStream` is a getter for the global of the same name (the very same class since Node 18),
 * so nothing changes if streaming is ever used, and nothing is loaded until then. Likewise the SDK's
 * checksum stream for web streams (@smithy/core, util-stream/checksum/ChecksumStream.browser.js, which
 * the Node version imports to handle a web stream given to it) declares `class extends ReadableStream`
 * at load time, in every function that reads or writes S3: the class is made instead when its only
 * user (createChecksumStream.browser.js, `ChecksumStream.prototype`) first reads it, never for Node
 * streams. Should anything else import that module, the build fails.
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
 *
 * small-endpoint-cache: the DynamoDB client's endpoint discovery (off unless a client turns it on,
 * which Switchboard's never do) keeps discovered endpoints in an LRU cache from mnemonist, whose
 * LRU and its iterator helpers (~7 KB) every function bundling DynamoDB would carry. The import of
 * `mnemonist/lru-cache` by @aws-sdk/endpoint-cache resolves instead to an LRU over a Map with the
 * methods the endpoint cache calls (get, set, has, peek, clear), same behaviour; any other
 * importer of mnemonist gets the real one.
 *
 * lazy-chunks: heavy libraries (MIME parsing and composing, HTML cleaning, template engines,
 * iCalendar, recurrence rules) are reached only through the small modules of shared/lazy/, each
 * re-exporting by name what the code uses of one library (`export { simpleParser } from 'mailparser'`).
 * An import of `#shared/lazy/<name>`, static or dynamic, is not bundled: it resolves to a stand-in
 * whose exports are getters that `require()` the lazy module's own bundle, the chunk, on their first
 * read, and the chunk is built beside the function's bundle, `<bundle>.lazy/<name>.cjs`
 * (functions/send/handler.cjs → functions/send/handler.lazy/templates.cjs), with the same options
 * and the other plugins. Module init loads none of it; the first request that reads one of the
 * exports loads the chunk (synchronously, so synchronous code keeps its shape), later ones find it
 * in require's cache. Beside the bundle under a name starting with the bundle's own, serverless-
 * esbuild zips a chunk with its function only (it leaves out of a function's zip every file named
 * after another function's bundle), and every build that writes bundles (serverless package,
 * npm start's scripts/local-stack/build.ts, the bench) writes their chunks too. Code must not read
 * a lazy export at module level, or the chunk loads at init. A lazy module re-exports libraries only:
 * a module of ours inside a chunk would be a second copy beside the bundle's (its error classes
 * failing `instanceof`, its clients and caches apart), so the build fails if a chunk holds one.
 * Under tsx and vitest (no bundling) the
 * lazy module is an ordinary module. The stand-in needs CommonJS output (`require`, `__filename`).
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
    build.onResolve({ filter: /^@smithy\/core\/event-streams$/ }, (args) =>
      args.kind === 'import-statement' && /[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]/.test(args.importer)
        ? { path: args.path, namespace: 'without-event-stream-serde' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'without-event-stream-serde' }, () => ({
      contents: [
        "const unavailable = () => { throw new Error('AWS SDK event streams are not bundled in Switchboard functions (scripts/esbuild-plugins.cjs)'); };",
        'export const eventStreamSerdeProvider = () => ({ serialize: unavailable, deserialize: unavailable });',
        'export const resolveEventStreamSerdeConfig = (input) => Object.assign(input, { eventStreamMarshaller: input.eventStreamSerdeProvider(input) });',
      ].join('\n'),
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
      contents:
        "Object.defineProperty(exports, 'ReadableStream', { enumerable: true, get: () => globalThis.ReadableStream });",
      loader: 'js',
    }));
    build.onResolve({ filter: /^\.\/ChecksumStream\.browser$/ }, (args) => {
      if (!/[\\/]@smithy[\\/]core[\\/].*[\\/]checksum[\\/]/.test(args.importer)) return undefined;
      if (!/[\\/]createChecksumStream\.browser\.js$/.test(args.importer))
        return {
          errors: [
            {
              text: `lazy-web-streams: ${args.importer} imports ChecksumStream.browser (only its prototype is made lazily)`,
            },
          ],
        };
      return { path: args.path, namespace: 'lazy-checksum-stream' };
    });
    build.onLoad({ filter: /.*/, namespace: 'lazy-checksum-stream' }, () => ({
      contents: [
        'let made;',
        'const make = () => (made ??= class ChecksumStream extends (typeof ReadableStream === "function" ? ReadableStream : function () {}) {});',
        'export const ChecksumStream = { get prototype() { return make().prototype; } };',
      ].join('\n'),
      loader: 'js',
    }));
  },
};

const lazyIniFiles = {
  name: 'lazy-ini-files',
  setup(build) {
    build.onResolve({ filter: /^node:fs\/promises$/ }, (args) =>
      /[\\/]shared-ini-file-loader[\\/]/.test(args.importer)
        ? { path: args.path, namespace: 'lazy-ini-files' }
        : undefined,
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
    build.onLoad(
      { filter: /[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]dist-es[\\/]schemas[\\/]schemas_\d+\.js$/ },
      async (args) => {
        const source = await readFile(args.path, 'utf8');
        // A literal `"__proto__":` would set the prototype where the computed key defines a property.
        const strings = new Map(
          [...source.matchAll(STRING_CONSTANT)]
            .filter(([, , literal]) => literal !== '"__proto__"')
            .map(([, name, literal]) => [name, literal]),
        );
        return {
          contents: source.replace(/\[(\w+)\]:/g, (key, name) => (strings.has(name) ? `${strings.get(name)}:` : key)),
          loader: 'js',
        };
      },
    );
  },
};

const smallEndpointCache = {
  name: 'small-endpoint-cache',
  setup(build) {
    build.onResolve({ filter: /^mnemonist\/lru-cache$/ }, (args) =>
      /[\\/]@aws-sdk[\\/]endpoint-cache[\\/]/.test(args.importer)
        ? { path: args.path, namespace: 'small-endpoint-cache' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'small-endpoint-cache' }, () => ({
      contents: [
        'export default class LRUCache {',
        '  constructor(capacity) { this.capacity = capacity; this.map = new Map(); }',
        '  get size() { return this.map.size; }',
        '  clear() { this.map.clear(); }',
        '  has(key) { return this.map.has(key); }',
        '  peek(key) { return this.map.get(key); }',
        '  get(key) { if (!this.map.has(key)) return undefined; const value = this.map.get(key); this.map.delete(key); this.map.set(key, value); return value; }',
        '  set(key, value) { this.map.delete(key); this.map.set(key, value); if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value); return this; }',
        '}',
      ].join('\n'),
      loader: 'js',
    }));
  },
};

const LAZY_MODULE = /^#shared\/lazy\/([\w-]+)$/;
const LAZY_NAMESPACE = 'lazy-chunks';

/** Where a bundle's chunk goes: `dir/handler.cjs` → `dir/handler.lazy/<name>.cjs`. */
const chunkPath = (bundle, name) => `${bundle.replace(/\.[cm]?js$/, '')}.lazy/${name}.cjs`;

const lazyChunks = {
  name: 'lazy-chunks',
  setup(build) {
    const options = build.initialOptions;
    // Which outputs use which lazy module is read from the metafile.
    options.metafile = true;
    const esbuild = build.esbuild;
    /** Lazy module name → its source file and export names, read once per build context. */
    const modules = new Map();
    const lazyModule = async (name, resolveDir) => {
      if (!modules.has(name)) {
        modules.set(
          name,
          (async () => {
            const resolved = await build.resolve(`#shared/lazy/${name}`, {
              kind: 'import-statement',
              resolveDir,
              pluginData: { lazyChunks: 'resolve' },
            });
            if (resolved.errors.length) throw new Error(resolved.errors[0].text);
            // The export names, as esbuild sees them: the file alone, not bundled.
            const scan = await esbuild.build({
              entryPoints: [resolved.path],
              bundle: false,
              write: false,
              metafile: true,
              format: 'esm',
              logLevel: 'silent',
            });
            const exported = Object.values(scan.metafile.outputs)[0].exports;
            // Getters are made for the names the module exports: each must be named (`export *` names none).
            if (exported.includes('default') || /\bexport\s*\*/.test(scan.outputFiles[0].text)) {
              throw new Error(
                `${resolved.path}: a lazy module names each of its exports (no default export, no export *)`,
              );
            }
            return { path: resolved.path, exported };
          })(),
        );
      }
      return modules.get(name);
    };

    // A rebuild (serverless-esbuild keeps a context per function) reads the lazy modules again.
    build.onStart(() => modules.clear());

    build.onResolve({ filter: LAZY_MODULE }, async (args) => {
      if (args.pluginData?.lazyChunks === 'resolve') return undefined;
      if (options.format !== 'cjs') return { errors: [{ text: `lazy-chunks needs format "cjs" (${args.path})` }] };
      const name = args.path.match(LAZY_MODULE)[1];
      await lazyModule(name, args.resolveDir);
      return { path: name, namespace: LAZY_NAMESPACE, pluginData: { resolveDir: args.resolveDir } };
    });
    build.onLoad({ filter: /.*/, namespace: LAZY_NAMESPACE }, async (args) => {
      const { exported } = await lazyModule(args.path, args.pluginData.resolveDir);
      // `__filename` is the bundle's own (esbuild leaves it to Node's CommonJS wrapper); `require` is
      // given an expression so that esbuild leaves it to Node too.
      const chunk = JSON.stringify(`.lazy/${args.path}.cjs`);
      return {
        contents: [
          'let chunk;',
          `const load = () => (chunk ??= require(__filename.replace(/\\.[cm]?js$/, "") + ${chunk}));`,
          "Object.defineProperty(exports, '__esModule', { value: true });",
          `for (const name of ${JSON.stringify(exported)}) Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] });`,
        ].join('\n'),
        loader: 'js',
      };
    });

    build.onEnd(async (result) => {
      if (result.errors.length || !result.metafile || options.write === false) return;
      const cwd = options.absWorkingDir ?? process.cwd();
      /** Lazy module name → the bundles that load it. */
      const users = new Map();
      for (const [output, { inputs }] of Object.entries(result.metafile.outputs)) {
        for (const input of Object.keys(inputs)) {
          if (!input.startsWith(`${LAZY_NAMESPACE}:`)) continue;
          const name = input.slice(LAZY_NAMESPACE.length + 1);
          users.set(name, [...(users.get(name) ?? []), resolve(cwd, output)]);
        }
      }
      const {
        entryPoints: _e,
        stdin: _s,
        outfile: _f,
        outdir: _d,
        outbase: _b,
        outExtension: _x,
        metafile: _m,
        write: _w,
        splitting: _p,
        plugins,
        ...chunkOptions
      } = options;
      await Promise.all(
        [...users].map(async ([name, bundles]) => {
          const { path } = await modules.get(name);
          // One build per lazy module, written beside every bundle that uses it.
          const built = await esbuild.build({
            ...chunkOptions,
            entryPoints: [path],
            outfile: join(cwd, `${name}.cjs`),
            write: false,
            plugins: (plugins ?? []).filter((plugin) => plugin.name !== 'lazy-chunks'),
            metafile: true,
          });
          // Libraries only: a module of ours in a chunk would be a second copy beside the bundle's own
          // (its classes failing instanceof, its state apart), so the build refuses it.
          const ours = Object.keys(built.metafile.inputs).filter(
            (input) =>
              !/(^|[\\/])node_modules[\\/]/.test(input) && resolve(cwd, input) !== path && !input.includes(':'),
          );
          if (ours.length)
            throw new Error(
              `lazy chunk ${name} would bundle modules of ours (${ours.join(', ')}): a lazy module re-exports libraries only`,
            );
          const code = built.outputFiles.find((file) => file.path.endsWith('.cjs')).contents;
          await Promise.all(
            bundles.map(async (bundle) => {
              const target = chunkPath(bundle, name);
              await mkdir(dirname(target), { recursive: true });
              await writeFile(target, code);
            }),
          );
        }),
      );
    });
  },
};

module.exports = [withoutEventStreams, lazyWebStreams, lazyIniFiles, literalSchemaKeys, smallEndpointCache, lazyChunks];
