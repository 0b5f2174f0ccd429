/**
 * Every in-page link of the README and the docs (`[text](#anchor)`) reaches a heading, with
 * anchors made as GitHub makes them: lowercase, punctuation other than `-` and `_` dropped, each
 * space a hyphen (so "Live clusters — `--kubeconfig`" gives four hyphens in a row).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';

const DOCUMENTS = ['README.md', 'docs/ARCHITECTURE.md', 'docs/DIAGNOSTICS.md', 'docs/BENCHMARKS.md'];

/** GitHub's anchor for a heading's text. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

it('in-page links of the README and docs reach a heading', () => {
  for (const path of DOCUMENTS) {
    const text = readFileSync(new URL(`../${path}`, import.meta.url), 'utf8').replace(/```[\s\S]*?```/g, '');
    const anchors = new Set<string>();
    for (const [, heading] of text.matchAll(/^#{1,6}\s+(.*)$/gm)) {
      const base = anchorOf(heading as string);
      let anchor = base;
      for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
      anchors.add(anchor);
    }
    const broken = [...text.matchAll(/\]\(#([^)\s]+)\)/g)]
      .map((m) => m[1] as string)
      .filter((a) => !anchors.has(a));
    assert.deepEqual(broken, [], `${path}: links to no heading`);
  }
});
