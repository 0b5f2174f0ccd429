/**
 * The page's document, sent in two parts. Its head goes out at once, so the browser fetches the
 * bundle while the input is still being read; the rest follows when the input has been read:
 * the first view's data (the summary and the namespace heatmap the page opens on) in a JSON
 * block the browser does not execute, so the page draws its first view without asking the API.
 * The bundle is a module script: it runs once the whole document has arrived, block included.
 */
import type { FirstView } from './api-types.ts';

/** The `id` of the first view's JSON block (web/src/first-view.ts reads it). */
const FIRST_VIEW_ID = 'palisade-first-view';

export const PAGE_HEAD = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Palisade</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
<script type="module" src="/assets/app.js"></script>
</head>
<body>
<noscript>Palisade's view needs JavaScript; the same data is under /api/.</noscript>
`;

export const PAGE_TAIL = `</body>
</html>
`;

/** The characters that could end or confuse a script element's content, as JSON escapes. */
const UNSAFE_IN_SCRIPT = /[<>&\u2028\u2029]/g;

/**
 * JSON that can stand inside a `<script>` element whatever the strings hold: a manifest's
 * `</script>` or `<!--` cannot end the element or change how it is parsed, because `<`, `>` and
 * `&` are written as `\u003c`, `\u003e` and `\u0026` (JSON.parse reads them back unchanged).
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    UNSAFE_IN_SCRIPT,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The first view's block, as it goes into the document. */
export function firstViewBlock(view: FirstView): string {
  return `<script type="application/json" id="${FIRST_VIEW_ID}">${jsonForScript(view)}</script>\n`;
}
