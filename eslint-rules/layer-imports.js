// An ESLint rule for docs/ARCHITECTURE.md's layer rule: a file under src/ imports another layer
// (a top-level folder of src/) only through that layer's index.ts or types.ts — or a sub-folder's
// own index.ts/types.ts (renderers/vpp-acl/index.ts). The shared vocabulary folders (net, model,
// util) are exempt: each of their files is a public module. Static imports, re-exports and
// dynamic import() are all checked; imports within a layer are free.
import { basename, dirname, relative, resolve, sep } from 'node:path';

const PUBLIC_FILES = new Set(['index.ts', 'types.ts']);

/** @type {import('eslint').Rule.RuleModule} */
export default {
  meta: {
    type: 'problem',
    docs: { description: 'import another layer only through its index.ts or types.ts' },
    schema: [
      {
        type: 'object',
        properties: {
          root: { type: 'string' },
          shared: { type: 'array', items: { type: 'string' } },
        },
        additionalProperties: false,
      },
    ],
    messages: {
      internal:
        "'{{source}}' reaches into the {{layer}} layer: import it through {{layer}}/index.ts or {{layer}}/types.ts (docs/ARCHITECTURE.md, layer rule)",
    },
  },
  create(context) {
    const options = context.options[0] ?? {};
    const root = resolve(context.cwd, options.root ?? 'src');
    const shared = new Set(options.shared ?? []);
    const file = context.filename;
    const fromLayer = layerOf(root, file);
    if (fromLayer === undefined) return {};

    /** @param {import('estree').Node | null | undefined} node */
    function check(node) {
      if (!node || node.type !== 'Literal' || typeof node.value !== 'string') return;
      const source = node.value;
      if (!source.startsWith('.')) return;
      const target = resolve(dirname(file), source);
      const layer = layerOf(root, target);
      if (layer === undefined || layer === fromLayer || shared.has(layer)) return;
      if (PUBLIC_FILES.has(basename(target))) return;
      context.report({ node, messageId: 'internal', data: { source, layer } });
    }

    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
    };
  },
};

/** The top-level folder of `root` a path lies in; undefined outside `root` or for its own files. */
function layerOf(root, path) {
  const inside = relative(root, path);
  if (inside.startsWith('..') || inside === '') return undefined;
  const parts = inside.split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}
