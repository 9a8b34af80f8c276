import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/local-stack/serverless-config';

/**
 * One style for the whole tree: every TypeScript and JavaScript file is as Prettier writes it with
 * the repository's .prettierrc.json (files .prettierignore names aside). `npm run format` rewrites
 * what this finds.
 */
/** The .ts, .cjs and .mjs files under `dir`: not in node_modules, nor in dot folders (.esbuild, .serverless, .switchboard: build output). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.(ts|cjs|mjs)$/.test(entry.name) ? [relative(ROOT, path)] : [];
  });
}

describe('formatting', () => {
  it('leaves every source file as Prettier writes it', async () => {
    const files = sources(ROOT);
    expect(files.length).toBeGreaterThan(100);
    const unformatted: string[] = [];
    for (const file of files) {
      const path = join(ROOT, file);
      const info = await prettier.getFileInfo(path, { ignorePath: join(ROOT, '.prettierignore') });
      if (info.ignored) continue;
      const options = await prettier.resolveConfig(path);
      if (!(await prettier.check(readFileSync(path, 'utf8'), { ...options, filepath: path })))
        unformatted.push(relative(ROOT, path));
    }
    expect(unformatted, 'run npm run format').toEqual([]);
  });
});
