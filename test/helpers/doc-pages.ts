/**
 * The documentation as the tests read it: README.md and every page under docs/ (one page per
 * command or area since the README became a front door), by path from the repository root.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** README.md, then every `docs/**\/*.md` in path order. */
export function documentationPages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.md'))
    .map((path) => join('docs', path).split('\\').join('/'))
    .sort();
  return ['README.md', ...docs];
}

/** One page's text, by path from the repository root. */
export function readPage(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}
