/**
 * Graphviz sizes every box and places every label by its own metrics for the font the drawing
 * names (Helvetica, src/analysis/format/graph-formats.ts); the browser draws the text in whatever
 * font it has under that name — often a wider one (DejaVu Sans where neither Helvetica nor a font
 * of its widths is installed) — and long labels would spill out of their boxes and onto their
 * neighbours. So the labels are brought back to the widths Graphviz planned: how much wider the
 * browser draws is measured on the nodes (a node is its label plus a known margin), and when it
 * draws wider, every label of the drawing is narrowed by that much.
 */

/** A node's margin on each side, in points: `margin="0.15,…"` inches in the DOT the server writes. */
const NODE_MARGIN = 0.15 * 72;
/** Graphviz's least node width (0.75 in): a node this wide may be wider than its label needs. */
const NODE_MIN_WIDTH = 0.75 * 72;

export function fitLabels(svg: SVGSVGElement): void {
  let ratio = 1;
  for (const node of svg.querySelectorAll<SVGGElement>('g.node')) {
    const shape = node.querySelector<SVGGraphicsElement>('path, polygon, ellipse');
    if (!shape) continue;
    const width = shape.getBBox().width;
    if (width <= NODE_MIN_WIDTH + 1) continue;
    const planned = width - 2 * NODE_MARGIN;
    for (const text of node.querySelectorAll<SVGTextElement>('text'))
      ratio = Math.max(ratio, text.getComputedTextLength() / planned);
  }
  if (ratio <= 1.005) return;
  for (const text of svg.querySelectorAll<SVGTextElement>('text')) {
    const drawn = text.getComputedTextLength();
    if (drawn <= 0) continue;
    text.setAttribute('textLength', (drawn / ratio).toFixed(2));
    text.setAttribute('lengthAdjust', 'spacingAndGlyphs');
  }
}
