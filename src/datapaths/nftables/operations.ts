/**
 * The steps of an incremental nftables transaction, as data: rendered to one `nft -f` script,
 * and replayed on the renderer's copy of the applied table once the kernel has accepted them.
 */
import {
  addChain,
  addElements,
  addEntries,
  declareSet,
  deleteChain,
  deleteElements,
  deleteEntries,
  deleteSet,
  type NftObjects,
  type SetDeclaration,
} from './objects.ts';

export type Operation =
  | {
      readonly type: 'add-set';
      readonly name: string;
      readonly declaration: SetDeclaration;
      readonly elements: readonly string[];
    }
  | { readonly type: 'del-set'; readonly name: string }
  | { readonly type: 'add-elements'; readonly set: string; readonly elements: readonly string[] }
  | { readonly type: 'del-elements'; readonly set: string; readonly elements: readonly string[] }
  | {
      readonly type: 'add-chain';
      readonly name: string;
      readonly lines: readonly string[];
      /** The chain exists in the kernel with other rules (found by reading back): empty it first. */
      readonly flush?: boolean;
    }
  | { readonly type: 'del-chain'; readonly name: string }
  | {
      readonly type: 'set-entry';
      readonly map: string;
      readonly key: string;
      readonly verdict: string;
      readonly replace: boolean;
    }
  | { readonly type: 'del-entry'; readonly map: string; readonly key: string };

export function operationsScript(operations: readonly Operation[]): string {
  const lines: string[] = [];
  for (const op of operations) {
    switch (op.type) {
      case 'add-set':
        lines.push(declareSet(op.name, op.declaration));
        append(lines, addElements(op.name, op.elements));
        break;
      case 'del-set':
        lines.push(deleteSet(op.name));
        break;
      case 'add-elements':
        append(lines, addElements(op.set, op.elements));
        break;
      case 'del-elements':
        append(lines, deleteElements(op.set, op.elements));
        break;
      case 'add-chain':
        append(lines, addChain(op.name, op.lines, op.flush));
        break;
      case 'del-chain':
        lines.push(deleteChain(op.name));
        break;
      case 'set-entry':
        // A verdict map entry cannot be overwritten in place: delete and add, in one transaction.
        if (op.replace) lines.push(...deleteEntries(op.map, [op.key]));
        lines.push(...addEntries(op.map, [[op.key, op.verdict]]));
        break;
      case 'del-entry':
        lines.push(...deleteEntries(op.map, [op.key]));
        break;
    }
  }
  return lines.length > 0 ? lines.join('\n') + '\n' : '';
}

/**
 * Appends one by one: a spread into push() passes every line as an argument and overflows the
 * stack at about 125,000 (a chain of that many rules).
 */
function append(lines: string[], more: readonly string[]): void {
  for (const line of more) lines.push(line);
}

/** Replays accepted operations on the applied copy. */
export function applyOperations(objects: NftObjects, operations: readonly Operation[]): void {
  for (const op of operations) {
    switch (op.type) {
      case 'add-set':
        objects.sets.set(op.name, { declaration: op.declaration, elements: new Set(op.elements) });
        break;
      case 'del-set':
        objects.sets.delete(op.name);
        break;
      case 'add-elements':
        for (const e of op.elements) objects.sets.get(op.set)?.elements.add(e);
        break;
      case 'del-elements':
        for (const e of op.elements) objects.sets.get(op.set)?.elements.delete(e);
        break;
      case 'add-chain':
        objects.chains.set(op.name, op.lines);
        break;
      case 'del-chain':
        objects.chains.delete(op.name);
        break;
      case 'set-entry':
        objects.maps.get(op.map)?.entries.set(op.key, op.verdict);
        break;
      case 'del-entry':
        objects.maps.get(op.map)?.entries.delete(op.key);
        break;
    }
  }
}
