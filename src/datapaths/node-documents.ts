/**
 * The printed form shared by targets that render per node and print JSON (the VPP stacks): one
 * document listing every rendered node, and each output's notes as warnings naming the node.
 */
import type { Printed, Rendered } from './types.ts';

/** `{ nodes: [{ node, …output }] }` without the outputs' notes, which become warnings. */
export function printNodeDocuments<Output extends { readonly notes: readonly string[] }>(
  rendered: readonly Rendered<Output>[],
): Printed {
  const warnings: string[] = [];
  const nodes = rendered.map(({ node, output }) => {
    const { notes, ...document } = output;
    for (const note of notes) warnings.push(`node ${node ?? ''}: ${note}`);
    return { node, ...document };
  });
  return { document: { json: { nodes } }, warnings };
}

/** The outputs by node (node targets' interpreters look nodes up by a pod's node). */
export function byNode<Output>(rendered: readonly Rendered<Output>[]): Map<string, Output> {
  return new Map(rendered.map(({ node, output }) => [node ?? '', output]));
}
