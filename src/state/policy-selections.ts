/**
 * A pod's NetworkPolicies per direction, with keys naming exactly those policy objects, computed
 * once per list of selecting policies (the subject index hands every pod of a label set the same
 * list object, until that set's selection changes) and shared by all its pods.
 *
 * Each stored policy object has a token, a number in base 36: a changed policy is a new object,
 * so a new token, and a selection key joins one token per selecting policy. Tokens are short
 * because every pod's table lookup hashes its key.
 */
import type { NetworkPolicy } from '../model/types.ts';
import { exactArray } from '../util/exact-array.ts';
import type { Selection } from './types.ts';

export const EMPTY_SELECTION: Selection = {
  all: [],
  ingress: [],
  egress: [],
  ingressKey: '',
  egressKey: '',
};

export class PolicySelections {
  private readonly cache = new WeakMap<readonly string[], Selection>();
  private readonly tokens = new Map<string, string>();
  private nextToken = 0;

  constructor(private readonly policies: ReadonlyMap<string, NetworkPolicy>) {}

  /** The policy object stored under `key` is new: it gets a token of its own. */
  renew(key: string): void {
    this.tokens.set(key, (this.nextToken++).toString(36));
  }

  forget(key: string): void {
    this.tokens.delete(key);
  }

  /** The selection of these policy keys (one list object per label set's selection). */
  of(keys: readonly string[]): Selection {
    const cached = this.cache.get(keys);
    if (cached) return cached;
    // One pass for the keys: with a label set per pod this runs for every pod. The lists are kept
    // per label set, at their exact size; a direction every policy affects shares `all`.
    const found: NetworkPolicy[] = [];
    let ingressKey = '';
    let egressKey = '';
    let ingressCount = 0;
    let egressCount = 0;
    for (const key of keys) {
      const policy = this.policies.get(key);
      const token = this.tokens.get(key);
      if (!policy || token === undefined) continue;
      found.push(policy);
      if (policy.affectsIngress) {
        ingressCount++;
        ingressKey = ingressKey === '' ? token : `${ingressKey}|${token}`;
      }
      if (policy.affectsEgress) {
        egressCount++;
        egressKey = egressKey === '' ? token : `${egressKey}|${token}`;
      }
    }
    const all = exactArray(found);
    const ingress = ingressCount === all.length ? all : exactArray(all.filter((p) => p.affectsIngress));
    const egress = egressCount === all.length ? all : exactArray(all.filter((p) => p.affectsEgress));
    const selection: Selection = { all, ingress, egress, ingressKey, egressKey };
    this.cache.set(keys, selection);
    return selection;
  }
}
