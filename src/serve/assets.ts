/**
 * The page's bundle. `npm run build` (and `prepare`, so a fresh clone has it) bundles
 * web/src with esbuild into dist/web/; served from there, nothing is built at run time and
 * nothing is fetched from elsewhere. Run from the sources (tests, `tsx`) without a build, the
 * bundle is made in memory by the same build script.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface WebAssets {
  readonly files: ReadonlyMap<string, { readonly body: string; readonly type: string }>;
}

/** Content types by extension; the bundle is app.js, app.css and the chunks app.js imports. */
const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

const typeOf = (name: string): string | undefined => TYPES[name.slice(name.lastIndexOf('.') + 1)];

/** The package's root: the nearest folder above this module with palisade's package.json. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && /"name":\s*"palisade"/.test(readFileSync(manifest, 'utf8'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error("serve: cannot find palisade's package folder");
    dir = parent;
  }
}

export async function loadWebAssets(): Promise<WebAssets> {
  const root = packageRoot();
  const built = join(root, 'dist', 'web');
  const files = new Map<string, { body: string; type: string }>();
  // Run from the TypeScript sources, a bundle in dist/ may be older than they are: build anew.
  const fromSources = import.meta.url.endsWith('.ts');
  if (!fromSources && existsSync(join(built, 'app.js')) && existsSync(join(built, 'app.css'))) {
    for (const name of readdirSync(built)) {
      const type = typeOf(name);
      if (type) files.set(name, { body: readFileSync(join(built, name), 'utf8'), type });
    }
  } else {
    // From the sources: the build script, in memory (esbuild is a development dependency).
    const script = join(root, 'web', 'build.mjs');
    const { buildWeb } = (await import(script)) as {
      buildWeb: (options: { write: boolean }) => Promise<Record<string, string>>;
    };
    const output = await buildWeb({ write: false });
    for (const [name, body] of Object.entries(output)) {
      const type = typeOf(name);
      if (type) files.set(name, { body, type });
    }
  }
  return { files };
}
