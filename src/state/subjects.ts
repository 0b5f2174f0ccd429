/**
 * Which policies select which pods, indexed both ways: one entry per distinct (namespace,
 * podSelector) with the label sets it matches, and for each label set the entries matching it.
 * A pod event touches only its namespace's selectors; a policy event only its own selector's
 * candidate label sets.
 */
import { selectorMatches } from '../model/selector.ts';
import type { LabelSelector } from '../model/types.ts';
import type { LabelSetEntry, LabelSetIndex } from './label-sets.ts';

interface SubjectEntry {
  readonly namespace: string;
  readonly selector: LabelSelector;
  /** Keys (`ns/name`) of the policies using this podSelector. */
  readonly policies: Set<string>;
  readonly sets: Set<LabelSetEntry>;
}

export class SubjectIndex {
  private readonly entries = new Map<string, Map<string, SubjectEntry>>();
  private readonly bySet = new Map<LabelSetEntry, Set<SubjectEntry>>();
  /** Policy keys per label set, kept until a link or a policy of the set changes. */
  private readonly selection = new Map<LabelSetEntry, readonly string[]>();

  constructor(private readonly labelSets: LabelSetIndex) {}

  addPolicy(namespace: string, selector: LabelSelector, policy: string): SubjectEntry {
    let inNamespace = this.entries.get(namespace);
    if (!inNamespace) this.entries.set(namespace, (inNamespace = new Map<string, SubjectEntry>()));
    let entry = inNamespace.get(selector.key);
    if (!entry) {
      entry = { namespace, selector, policies: new Set(), sets: new Set() };
      inNamespace.set(selector.key, entry);
      for (const set of this.labelSets.candidates(namespace, selector)) {
        if (selectorMatches(selector, set.labels)) this.link(entry, set);
      }
    }
    entry.policies.add(policy);
    this.invalidate(entry);
    return entry;
  }

  removePolicy(namespace: string, selector: LabelSelector, policy: string): void {
    const inNamespace = this.entries.get(namespace);
    const entry = inNamespace?.get(selector.key);
    if (!inNamespace || !entry) return;
    entry.policies.delete(policy);
    this.invalidate(entry);
    if (entry.policies.size > 0) return;
    inNamespace.delete(selector.key);
    for (const set of entry.sets) {
      this.bySet.get(set)?.delete(entry);
      this.selection.delete(set);
    }
  }

  /** A label set appeared in a namespace: link it to the selectors that match it. */
  labelSetCreated(set: LabelSetEntry): void {
    for (const entry of this.entries.get(set.partition)?.values() ?? []) {
      if (selectorMatches(entry.selector, set.labels)) this.link(entry, set);
    }
  }

  labelSetDeleted(set: LabelSetEntry): void {
    for (const entry of this.bySet.get(set) ?? []) entry.sets.delete(set);
    this.bySet.delete(set);
    this.selection.delete(set);
  }

  /**
   * Policy keys whose podSelector selects the given label set, sorted. The same array object is
   * returned until the selection changes, so callers may cache what they derive from it.
   */
  policiesFor(set: LabelSetEntry | undefined): readonly string[] {
    if (!set) return [];
    const cached = this.selection.get(set);
    if (cached) return cached;
    const result: string[] = [];
    for (const entry of this.bySet.get(set) ?? []) for (const policy of entry.policies) result.push(policy);
    result.sort();
    this.selection.set(set, result);
    return result;
  }

  /** Pod ids selected by a podSelector in a namespace. */
  podsSelected(namespace: string, selector: LabelSelector): string[] {
    const entry = this.entries.get(namespace)?.get(selector.key);
    const result: string[] = [];
    for (const set of entry?.sets ?? []) for (const member of set.members) result.push(member);
    return result;
  }

  private invalidate(entry: SubjectEntry): void {
    for (const set of entry.sets) this.selection.delete(set);
  }

  private link(entry: SubjectEntry, set: LabelSetEntry): void {
    this.selection.delete(set);
    entry.sets.add(set);
    let entries = this.bySet.get(set);
    if (!entries) this.bySet.set(set, (entries = new Set()));
    entries.add(entry);
  }
}
