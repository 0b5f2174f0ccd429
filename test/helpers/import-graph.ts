/**
 * The import graph of src/ as written: every file's relative imports (static, re-exports, type
 * imports and dynamic import()), and the graph between layers (top-level folders of src/) it
 * implies. The architecture test holds docs/ARCHITECTURE.md's layer table to it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

export const SRC = resolve(import.meta.dirname, '..', '..', 'src');

/** Relative path (from src/) → the relative paths it imports. */
export function moduleGraph(root = SRC): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(root)) {
    const text = readFileSync(file, 'utf8');
    const targets = new Set<string>();
    for (const match of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'(\.[^']+)'/gm))
      targets.add(relative(root, resolve(dirname(file), match[1] as string)));
    graph.set(relative(root, file), [...targets].sort());
  }
  return graph;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** A module's layer: its top-level folder under src/ (files directly in src/ have none). */
export function layerOf(module: string): string | undefined {
  const parts = module.split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/** Layer → the other layers its modules import. */
export function layerGraph(modules: ReadonlyMap<string, readonly string[]>): Map<string, Set<string>> {
  const layers = new Map<string, Set<string>>();
  for (const [module, targets] of modules) {
    const from = layerOf(module);
    if (from === undefined) continue;
    const set = layers.get(from) ?? new Set<string>();
    layers.set(from, set);
    for (const target of targets) {
      const to = layerOf(target);
      if (to !== undefined && to !== from) set.add(to);
    }
  }
  return layers;
}

/** One cycle of the graph, if it has any (as the list of nodes around it). */
export function findCycle<T>(graph: ReadonlyMap<T, Iterable<T>>): T[] | undefined {
  const state = new Map<T, 'open' | 'done'>();
  const path: T[] = [];
  const visit = (node: T): T[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}
