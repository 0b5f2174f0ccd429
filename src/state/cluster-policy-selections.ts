/**
 * The selection objects the cluster policy store interns (cluster-policy-store.ts): each slot's
 * policies selecting a pod side, numbered so callers memoize by number, and a side's plan of
 * them in its tiers' order. Keys and serial lists are written when first read.
 */
import { clusterPolicyKey, type TierSpec } from '../model/cluster-policy.ts';
import type { ClusterPolicy } from '../model/types.ts';
import type { PlanSelection, TierSelection } from './types.ts';
import type { SerialNumbering } from '../util/serial-hash.ts';

/**
 * A number for each policy object the store has interned a selection of, unique in the store (a
 * changed policy is a new object): the same history numbers the same policies alike, so selection
 * keys, and the ids of the lists made from them, are the same for the same input. A class, not a
 * closure per store (see SerialNumbering).
 */
export class PolicySerials implements SerialNumbering<ClusterPolicy> {
  private readonly serials = new WeakMap<ClusterPolicy, number>();
  private next = 0;

  serialOf(policy: ClusterPolicy): number {
    let serial = this.serials.get(policy);
    if (serial === undefined) this.serials.set(policy, (serial = this.next++));
    return serial;
  }

  /** `Kind/name#n`, n the policy object's serial number. */
  tokenOf(policy: ClusterPolicy): string {
    return `${clusterPolicyKey(policy)}#${this.serialOf(policy)}`;
  }
}

/** Whether a selection holds exactly these policy objects, in this order. */
export function holdsPolicies(selection: TierSelection, policies: readonly ClusterPolicy[]): boolean {
  const held = selection.policies;
  if (held.length !== policies.length) return false;
  for (let i = 0; i < held.length; i++) if (held[i] !== policies[i]) return false;
  return true;
}

/**
 * An interned selection. Its key — the policies' tokens, naming exactly these objects — is
 * written when first read: the sides compiled as tables (configurator/permit-side.ts) never read
 * it; its policies' serial numbers too, which only those sides read.
 */
export class Selection implements TierSelection {
  #key: string | undefined;
  #policySerials: readonly number[] | undefined;
  readonly #serials: PolicySerials;

  constructor(
    readonly policies: readonly ClusterPolicy[],
    serials: PolicySerials,
    readonly serial: number,
  ) {
    this.#serials = serials;
  }

  get key(): string {
    return (this.#key ??= this.policies.map((policy) => this.#serials.tokenOf(policy)).join('|'));
  }

  get policySerials(): readonly number[] {
    return (this.#policySerials ??= this.policies.map((policy) => this.#serials.serialOf(policy)));
  }
}

/** A side's selections in the plan's order; its key (`tier:selection key` per tier) written when first read. */
export class Plan implements PlanSelection {
  #key: string | undefined;

  constructor(
    readonly plan: readonly TierSpec[],
    readonly selections: readonly TierSelection[],
  ) {}

  get key(): string {
    return (this.#key ??= this.plan
      .map((t, i) => `${t.name}:${this.selections[i]?.key ?? ''}`)
      .join('\u0001'));
  }
}
