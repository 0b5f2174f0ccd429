/**
 * An order of a square heatmap's rows (and columns) that shows its structure: reverse
 * Cuthill–McKee over the cells as an undirected graph. Groups that talk to each other end up
 * next to each other, so blocks appear along the diagonal instead of dots scattered over the
 * whole square; groups with no connection at all go last, by name order.
 */

/** A permutation: `order[i]` is the old index of the row shown at position i. */
export function orderForStructure(
  size: number,
  cells: readonly (readonly [number, number, number])[],
): number[] {
  const neighbours: number[][] = Array.from({ length: size }, () => []);
  for (const [r, c] of cells) {
    if (r === c) continue;
    (neighbours[r] as number[]).push(c);
    (neighbours[c] as number[]).push(r);
  }
  const degree = neighbours.map((list) => new Set(list).size);
  const visited = new Uint8Array(size);
  const order: number[] = [];
  const isolated: number[] = [];
  // Start each component at a vertex of least degree (a peripheral one, as the method asks).
  const starts = [...Array(size).keys()].sort(
    (a, b) => (degree[a] as number) - (degree[b] as number) || a - b,
  );
  for (const start of starts) {
    if (visited[start]) continue;
    if (degree[start] === 0) {
      visited[start] = 1;
      isolated.push(start);
      continue;
    }
    const component: number[] = [start];
    visited[start] = 1;
    for (let head = 0; head < component.length; head++) {
      const next = [...new Set(neighbours[component[head] as number])]
        .filter((n) => !visited[n])
        .sort((a, b) => (degree[a] as number) - (degree[b] as number) || a - b);
      for (const n of next) {
        visited[n] = 1;
        component.push(n);
      }
    }
    order.push(...component.reverse());
  }
  return [...order, ...isolated.sort((a, b) => a - b)];
}
