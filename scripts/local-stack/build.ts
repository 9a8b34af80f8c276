import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build, type BuildOptions } from 'esbuild';
import { digest, entries as cacheEntries, makingFolder, prune, publish } from './cache';
import { ROOT, loadServerlessConfig, type ServerlessConfig } from './serverless-config';

/**
 * The function bundles `npm start` runs, built the way `serverless package` builds them for Lambda
 * (serverless.yml's `custom.esbuild`: the same options, aliases and plugins) but in one esbuild call
 * for every function: shared modules (the AWS SDK above all) are parsed once instead of once per
 * function, about three times faster than serverless-esbuild's build per function (1.1 s against
 * 3.1 s for 23 functions on 2 cores), and it runs while the emulators start. Each bundle is still a
 * whole, standalone file (no code splitting), as deployed, with beside it the lazy chunks it loads on
 * first use (the lazy-chunks plugin of scripts/esbuild-plugins.cjs writes them when the build ends).
 *
 * Output: `<outDir>/functions/<name>/handler.cjs` and its chunks `handler.lazy/<module>.cjs`, the
 * layout serverless offline expects under its `location` (scripts/local-stack/serverless-prebuilt.cjs
 * points it there).
 *
 * With a cache folder, a build is kept there with the list of its inputs and their digests, and the
 * next build whose inputs are all unchanged copies it instead (about 5 s of CPU saved on 2 cores).
 */
const require = createRequire(import.meta.url);

/** serverless-esbuild's own options, which esbuild does not know. */
const PLUGIN_ONLY = [
  'concurrency',
  'zipConcurrency',
  'exclude',
  'outputFileExtension',
  'outputWorkFolder',
  'outputBuildFolder',
  'packager',
  'watch',
  'keepOutputDirectory',
  'plugins',
];

/** serverless.yml's `custom.esbuild` as esbuild options (aliases made absolute, plugins loaded). */
export function esbuildOptions(config: ServerlessConfig = loadServerlessConfig()): BuildOptions {
  const custom = config.custom.esbuild as Record<string, unknown>;
  const options = Object.fromEntries(
    Object.entries(custom).filter(([key]) => !PLUGIN_ONLY.includes(key)),
  ) as BuildOptions;
  const alias = Object.fromEntries(
    Object.entries(options.alias ?? {}).map(([name, target]) => [
      name,
      target.startsWith('.') ? join(ROOT, target) : target,
    ]),
  );
  const extension = String(custom.outputFileExtension ?? '.js');
  return {
    ...options,
    alias,
    plugins: custom.plugins ? (require(join(ROOT, String(custom.plugins))) as BuildOptions['plugins']) : [],
    outExtension: { '.js': extension },
  };
}

/** Each function's entry file, from its `handler` (`functions/grants/handler.handler` → `functions/grants/handler.ts`). */
export function functionEntries(config: ServerlessConfig = loadServerlessConfig()): string[] {
  const entries = Object.values(config.functions).map((fn) => `${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.ts`);
  return [...new Set(entries)];
}

/** Builds every function's bundle into `outDir`; resolves with the entries built. */
export async function buildFunctionBundles(
  outDir: string,
  options: { cacheDir?: string; config?: ServerlessConfig } = {},
): Promise<{ entries: string[]; fromCache: boolean }> {
  const config = options.config ?? loadServerlessConfig();
  const entries = functionEntries(config);
  const esbuild = esbuildOptions(config);
  const cache = options.cacheDir && join(options.cacheDir, 'functions');
  const setup = cache ? buildSetup(esbuild, entries) : '';
  if (cache && (await copyCachedBuild(cache, setup, outDir))) return { entries, fromCache: true };
  const began = Date.now();
  const result = await build({
    ...esbuild,
    absWorkingDir: ROOT,
    entryPoints: entries,
    outdir: outDir,
    outbase: ROOT,
    logLevel: 'error',
  });
  // The cache is an optimisation: failing to write it fails nothing.
  if (cache && result.metafile) {
    try {
      keepBuild(cache, setup, Object.keys(result.metafile.inputs), outDir, began);
    } catch {
      /* a full disk, say: the next start builds again */
    }
  }
  return { entries, fromCache: false };
}

/**
 * Everything a build depends on besides the files it reads (those are in its metafile): the options
 * (plugins by their source), the entries, esbuild's version, the package manifest and TypeScript
 * configuration (module resolution), the lockfiles (the libraries inside lazy chunks, which are
 * built apart from the bundles' metafile) and the lazy modules themselves.
 */
function buildSetup(options: BuildOptions, entries: string[]): string {
  const { plugins: _plugins, ...rest } = options;
  const files = [
    'scripts/esbuild-plugins.cjs',
    'package.json',
    'tsconfig.json',
    'package-lock.json',
    'node_modules/.package-lock.json',
  ];
  const lazy = join(ROOT, 'shared', 'lazy');
  if (existsSync(lazy))
    files.push(
      ...readdirSync(lazy)
        .sort()
        .map((name) => `shared/lazy/${name}`),
    );
  return JSON.stringify({
    options: rest,
    entries,
    esbuild: (require('esbuild/package.json') as { version: string }).version,
    files: Object.fromEntries(files.map((file) => [file, fileDigest(file)])),
  });
}

/** A file's digest by its path from the checkout; '' for one that is not there. */
function fileDigest(path: string): string {
  try {
    return digest(readFileSync(join(ROOT, path)));
  } catch {
    return '';
  }
}

interface KeptBuild {
  setup: string;
  /** Each input file (path from the checkout) and its digest when the build read it. */
  inputs: Record<string, string>;
}

/** Copies into `outDir` a kept build of the same setup whose inputs are all unchanged; false when there is none. */
async function copyCachedBuild(cache: string, setup: string, outDir: string): Promise<boolean> {
  for (const name of cacheEntries(cache)) {
    const entry = join(cache, name);
    try {
      const kept = JSON.parse(readFileSync(join(entry, 'build.json'), 'utf8')) as KeptBuild;
      if (kept.setup !== setup || !Object.entries(kept.inputs).every(([path, hash]) => fileDigest(path) === hash))
        continue;
      // In libuv's threads: this process has other work meanwhile.
      await cp(join(entry, 'out'), outDir, { recursive: true });
      // Most recently used first, and kept longest.
      const now = new Date();
      utimesSync(entry, now, now);
      return true;
    } catch {
      // Removed meanwhile by another instance's pruning, or never complete: build instead.
      rmSync(outDir, { recursive: true, force: true });
    }
  }
  return false;
}

/**
 * Keeps the build just made in `outDir`, with its inputs (esbuild's metafile paths; plugin namespaces
 * left out) and their digests now; unless one was written since the build `began` (or just before:
 * some file systems keep times to the second or two), when the build may hold what it was before.
 */
function keepBuild(cache: string, setup: string, metafileInputs: string[], outDir: string, began: number): void {
  const paths = metafileInputs.filter((input) => !/^[\w-]+:/.test(input)).sort();
  if (paths.some((path) => statSync(join(ROOT, path)).mtimeMs >= began - 2000)) return;
  const inputs = Object.fromEntries(paths.map((input) => [input, fileDigest(input)]));
  const kept: KeptBuild = { setup, inputs };
  const text = JSON.stringify(kept);
  const name = digest(text);
  if (existsSync(join(cache, name))) return;
  const folder = makingFolder(cache, name);
  cpSync(outDir, join(folder, 'out'), { recursive: true });
  writeFileSync(join(folder, 'build.json'), text);
  publish(folder, cache, name);
  // Two builds: the checkout's current one and one before it (another branch, say).
  prune(cache, 2);
}
