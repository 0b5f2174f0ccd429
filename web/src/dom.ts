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
