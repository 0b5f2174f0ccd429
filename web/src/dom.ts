/**
 * Building the page's elements. Text goes in as text nodes, never as markup: a name, label or
 * annotation holding `<script>` is shown as those characters. Nothing in the view sets
 * innerHTML; this is the one way elements are made.
 */
type Child = Node | string | number | null | undefined | false;

export interface Attributes {
  readonly class?: string;
  readonly title?: string;
  readonly [attribute: string]: string | number | boolean | undefined | ((event: Event) => void);
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

export function clear(element: Element): void {
  while (element.firstChild) element.removeChild(element.firstChild);
}

/** `1234` → `1,234`. */
export const count = (n: number): string => n.toLocaleString('en-US');

/**
 * An SVG drawing the server made (Graphviz's, from the same data as `matrix -o svg`), parsed as
 * SVG — never as HTML — and kept to drawing: scripts, foreign content, event handlers and links
 * are removed, so nothing in it can run or navigate whatever the manifests' names hold.
 */
export function svgFrom(text: string): SVGSVGElement | undefined {
  const parsed = new DOMParser().parseFromString(text, 'image/svg+xml');
  const svg = parsed.documentElement;
  if (svg.nodeName !== 'svg' || parsed.querySelector('parsererror')) return undefined;
  for (const bad of [...svg.querySelectorAll('script, foreignObject, iframe, a')])
    bad.replaceWith(...bad.childNodes);
  for (const node of [svg, ...svg.querySelectorAll('*')])
    for (const attribute of [...node.attributes])
      if (/^on/i.test(attribute.name) || /href$/i.test(attribute.name)) node.removeAttribute(attribute.name);
  return document.importNode(svg, true) as unknown as SVGSVGElement;
}
