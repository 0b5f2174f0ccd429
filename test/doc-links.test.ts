/**
 * Every link of the README and of every page under docs/ reaches something: an in-page link
 * (`[text](#anchor)`) a heading of its page, a relative link (`[text](commands/lint.md#by-class)`,
 * an image) a file of the repository and, with an anchor into a Markdown page, a heading there.
 * Anchors are made as GitHub makes them: lowercase, punctuation other than `-` and `_` dropped,
 * each space a hyphen (so "Live clusters — `--kubeconfig`" gives four hyphens in a row), and a
 * repeated heading gets `-1`, `-2`, ….
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { it } from 'node:test';
import { documentationPages, readPage } from './helpers/doc-pages.ts';

const ROOT = join(import.meta.dirname, '..');

/** GitHub's anchor for a heading's text. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** A page's text without its code blocks (a `#` line in a shell example is not a heading). */
function prose(path: string): string {
  return readPage(path).replace(/```[\s\S]*?```/g, '');
}

/** The anchors of a page's headings. */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  for (const [, heading] of prose(path).matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const base = anchorOf(heading as string);
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

it('covers the README and every page under docs/', () => {
  const pages = documentationPages();
  for (const page of ['README.md', 'docs/commands/matrix.md', 'docs/install.md', 'docs/ARCHITECTURE.md'])
    assert.ok(pages.includes(page), page);
});

it('every link of the README and the docs reaches a file and a heading', () => {
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = (path: string): Set<string> => {
    let found = anchors.get(path);
    if (!found) anchors.set(path, (found = anchorsOf(path)));
    return found;
  };
  const broken: string[] = [];
  for (const page of documentationPages()) {
    for (const [, target = ''] of prose(page).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not ours to check
      const [file = '', anchor] = target.split('#', 2);
      const path =
        file === ''
          ? page
          : normalize(join(dirname(page), file))
              .split('\\')
              .join('/');
      if (!existsSync(join(ROOT, path))) broken.push(`${page}: ${target} (no file ${path})`);
      else if (anchor !== undefined && path.endsWith('.md') && !anchorsIn(path).has(anchor))
        broken.push(`${page}: ${target} (no heading #${anchor} in ${path})`);
    }
  }
  assert.deepEqual(broken, []);
});
