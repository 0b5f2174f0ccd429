/**
 * The first view's data, embedded by the server in the page's document (a JSON block the
 * browser does not execute; src/serve/page.ts writes it): the summary and the namespace
 * heatmap the page opens on, so the first view is drawn without a request to the API. Taken
 * once: every later view asks the API.
 */
import type { FirstView } from './api.ts';

/** The embedded data, removed from the document; undefined when there is none. */
export function takeFirstView(): FirstView | undefined {
  const block = document.getElementById('palisade-first-view');
  if (!block) return undefined;
  block.remove();
  try {
    return JSON.parse(block.textContent ?? '') as FirstView;
  } catch {
    return undefined;
  }
}
