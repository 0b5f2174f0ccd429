/**
 * Where the parts of the graph's drawing are on the page (namespace boxes, nodes with their
 * shape and texts, arrow labels), and the two questions the page tests ask of them: do two boxes
 * overlap, does a text lie inside its shape.
 */
import type { Page } from 'playwright-core';

export interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export const overlap = (a: Box, b: Box): boolean =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
export const inside = (a: Box, b: Box): boolean =>
  a.x >= b.x - 0.5 &&
  a.y >= b.y - 0.5 &&
  a.x + a.width <= b.x + b.width + 0.5 &&
  a.y + a.height <= b.y + b.height + 0.5;

/** Where the drawing's parts under `root` are, in the page: namespace boxes, nodes (shape, texts), arrow labels. */
export async function drawingBoxes(
  page: Page,
  root = '.drawing',
): Promise<{
  clusters: Box[];
  nodes: { title: string; shape: Box; texts: Box[] }[];
  edgeLabels: Box[];
}> {
  return page
    .evaluate((root) => {
      // No DOM types in the tests' compilation: the little of it used here, typed by hand.
      interface Rect {
        x: number;
        y: number;
        width: number;
        height: number;
      }
      interface El {
        querySelector(selector: string): El | null;
        querySelectorAll(selector: string): El[];
        getBoundingClientRect(): Rect;
        textContent: string | null;
      }
      const { document } = globalThis as unknown as { document: El };
      // No function is given a name here: named ones need a helper of the bundler the page lacks.
      const zero = { x: 0, y: 0, width: 0, height: 0 };
      return {
        clusters: [...document.querySelectorAll(`${root} g.cluster`)].map(
          (g) => g.querySelector('path, polygon')?.getBoundingClientRect() ?? zero,
        ),
        nodes: [...document.querySelectorAll(`${root} g.node`)].map((g) => ({
          title: g.querySelector('title')?.textContent ?? '',
          shape: g.querySelector('path, polygon')?.getBoundingClientRect() ?? zero,
          texts: [...g.querySelectorAll('text')].map((t) => t.getBoundingClientRect()),
        })),
        edgeLabels: [...document.querySelectorAll(`${root} g.edge text`)].map((t) =>
          t.getBoundingClientRect(),
        ),
      };
    }, root)
    .then((found) => ({
      clusters: found.clusters.map(plain),
      nodes: found.nodes.map((n) => ({ title: n.title, shape: plain(n.shape), texts: n.texts.map(plain) })),
      edgeLabels: found.edgeLabels.map(plain),
    }));
}

/** A DOMRect as a plain box (its fields survive the trip out of the page). */
function plain(r: Box): Box {
  return { x: r.x, y: r.y, width: r.width, height: r.height };
}
