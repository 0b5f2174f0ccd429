/**
 * Address groups: the sets of pod addresses that policy peers select, shared between every
 * policy (and pod) that uses an equal peer, created on first use and dropped when the last
 * policy referencing them goes. Indexed so that a pod or namespace event only visits the groups
 * whose scope covers it: groups of its namespace, groups whose namespaceSelector matches its
 * namespace, and address-based (ipBlock) groups.
 */
import { cidrContains } from '../net/ip.ts';
import { selectorMatches } from '../model/selector.ts';
import type { Endpoint, LabelSelector, Labels } from '../model/types.ts';
import { ADMITTED, groupAdmits, groupKey, namedPortOf, NOT_ADMITTED } from './group-key.ts';
import type { LabelSetIndex } from './label-sets.ts';
import { countPort, GroupRecord } from './group-record.ts';
import type { AddressGroup, GroupMember, GroupSpec } from './types.ts';

/** The store, as the group index sees it. */
interface GroupHost {
  pod(id: string): Endpoint | undefined;
  namespaceLabels(namespace: string): Labels | undefined;
  allPods(): Iterable<Endpoint>;
  readonly podLabelSets: LabelSetIndex;
  /** Namespaces as label sets in partition "", members are namespace names. */
  readonly namespaceLabelSets: LabelSetIndex;
}

/** The pods a scope admits (see GroupIndex.scopes), and a plain member object for each. */
interface ScopeMembers {
  readonly pods: Endpoint[];
  readonly members: GroupMember[];
}

interface NamespaceSelectorEntry {
  readonly selector: LabelSelector;
  readonly groups: Set<GroupRecord>;
  readonly namespaces: Set<string>;
}

export class GroupIndex {
  /** Bumped whenever some named-port group gains or loses a port number (tables depend on those). */
  partitionVersion = 0;
  /** Groups whose port numbers changed since the last drain. */
  private readonly partitionChanges = new Set<string>();

  /** Pods whose membership of some group changed since the last drain. */
  private readonly memberChanges = new Set<string>();

  drainMemberChanges(): Set<string> {
    const changes = new Set(this.memberChanges);
    this.memberChanges.clear();
    return changes;
  }

  /** The named-port groups whose port numbers changed since the last call. */
  drainPartitionChanges(): Set<string> {
    const changes = new Set(this.partitionChanges);
    this.partitionChanges.clear();
    return changes;
  }
  private readonly groups = new Map<string, GroupRecord>();
  private readonly byNamespace = new Map<string, Set<GroupRecord>>();
  private readonly byNamespaceSelector = new Map<string, NamespaceSelectorEntry>();
  private readonly selectorsOfNamespace = new Map<string, Set<NamespaceSelectorEntry>>();
  private readonly addressGroups = new Set<GroupRecord>();
  private readonly entriesByKey = new Map<string, Set<NamespaceSelectorEntry>>();
  private readonly keylessEntries = new Set<NamespaceSelectorEntry>();
  /**
   * Per namespace, how many pods expose each named port (`name/protocol`): a new named-port
   * group skips the namespaces where none does. Egress named ports make one group per protocol,
   * and most of them (`http` over UDP) have no member anywhere: without this, each such group
   * tested every pod its selectors admit.
   */
  private readonly namedPorts = new Map<string, Map<string, number>>();
  /**
   * While a resync creates groups (see `batch`): per scope spanning a namespace selector, the pods
   * a new group of that scope admits, with their member objects. One peer of a cluster policy
   * makes a group per named port and protocol besides its plain group, all with one scope: at
   * 100,000 pods and 1,000 AdminNetworkPolicies that was 1.3 million namespace visits for 108
   * distinct scopes. Dropped when a pod or namespace changes, and when the batch ends.
   */
  private scopes: Map<string, ScopeMembers> | undefined;

  constructor(private readonly host: GroupHost) {}

  /**
   * Runs `work` (a resync's upserts) sharing each scope's walk among the groups it creates;
   * every group is complete when `acquire` returns, as outside a batch.
   */
  batch<T>(work: () => T): T {
    this.scopes = new Map();
    this.batching = true;
    try {
      return work();
    } finally {
      this.scopes = undefined;
      this.batching = false;
    }
  }

  /**
   * True inside `batch`: a resync re-renders everything and throws the member and partition
   * changes away, so they are not recorded (231,000 member admissions at shape a ×1, into a set
   * of 100,000 pods copied once more when drained).
   */
  private batching = false;

  get(key: string): AddressGroup | undefined {
    return this.groups.get(key);
  }

  /** Policies referencing a group. */
  policiesOf(key: string): ReadonlySet<string> {
    return this.groups.get(key)?.policies ?? new Set();
  }

  size(): number {
    return this.groups.size;
  }

  keys(): IterableIterator<string> {
    return this.groups.keys();
  }

  /**
   * Takes a reference to the group for `spec` on behalf of a policy, creating it if needed
   * (`key`: the spec's groupKey, when the caller has it already).
   */
  acquire(spec: GroupSpec, policy: string, key = groupKey(spec)): string {
    let group = this.groups.get(key);
    if (!group) {
      group = new GroupRecord(key, spec);
      this.groups.set(key, group);
      this.indexGroup(group);
      this.admitScope(group);
    }
    group.policies.add(policy);
    return key;
  }

  release(key: string, policy: string): void {
    const group = this.groups.get(key);
    if (!group) return;
    group.policies.delete(policy);
    if (group.policies.size > 0) return;
    this.groups.delete(key);
    this.unindexGroup(group);
  }

  /** Scopes' members are computed again (a Map cleared allocates its table anew, even empty). */
  private forgetScopes(): void {
    if (this.scopes && this.scopes.size > 0) this.scopes.clear();
  }

  /** A pod was added, changed or removed: updates memberships, returns the groups that changed. */
  podChanged(before: Endpoint | undefined, after: Endpoint | undefined): Set<string> {
    this.forgetScopes();
    if (before) this.countNamedPorts(before, -1);
    if (after) this.countNamedPorts(after, 1);
    const changed = new Set<string>();
    const id = (after ?? before)?.id;
    if (!id) return changed;
    const namespace = (after ?? before)?.namespace as string;
    if (!before || !after || before.namespace === after.namespace) {
      // One namespace: its candidate groups are distinct (each group sits in one index), so
      // they are visited in place — no arrays or sets for each of a resync's pods.
      this.eachCandidate(namespace, (group) => {
        if (this.refreshMember(group, after, id)) changed.add(group.key);
      });
      return changed;
    }
    const candidates = new Set<GroupRecord>();
    const add = (group: GroupRecord): void => void candidates.add(group);
    this.eachCandidate(before.namespace, add);
    this.eachCandidate(after.namespace, add);
    for (const group of candidates) if (this.refreshMember(group, after, id)) changed.add(group.key);
    return changed;
  }

  /**
   * A namespace's labels changed (or it appeared or went): re-evaluates the namespaceSelector
   * entries whose answer can differ — those reading a label key that changed, plus, for a
   * namespace appearing or going, those that can match without any key.
   */
  namespaceChanged(namespace: string, labels: Labels | undefined, previous?: Labels): Set<string> {
    this.forgetScopes();
    const changed = new Set<string>();
    const current = this.selectorsOfNamespace.get(namespace) ?? new Set<NamespaceSelectorEntry>();
    const candidates = new Set<NamespaceSelectorEntry>();
    const keys = new Set<string>();
    for (const [k, v] of Object.entries(labels ?? {})) if (previous?.[k] !== v) keys.add(k);
    for (const [k, v] of Object.entries(previous ?? {})) if (labels?.[k] !== v) keys.add(k);
    for (const key of keys) for (const entry of this.entriesByKey.get(key) ?? []) candidates.add(entry);
    if (!labels || !previous) for (const entry of this.keylessEntries) candidates.add(entry);
    const next = new Set([...current].filter((e) => !candidates.has(e)));
    for (const entry of candidates) {
      if (labels && selectorMatches(entry.selector, labels)) next.add(entry);
    }
    const flipped = [...current].filter((e) => !next.has(e)).concat([...next].filter((e) => !current.has(e)));
    for (const entry of current) if (!next.has(entry)) entry.namespaces.delete(namespace);
    for (const entry of next) entry.namespaces.add(namespace);
    if (next.size > 0) this.selectorsOfNamespace.set(namespace, next);
    else this.selectorsOfNamespace.delete(namespace);
    for (const entry of flipped) {
      for (const group of entry.groups) {
        for (const set of this.host.podLabelSets.all(namespace)) {
          for (const id of set.members)
            if (this.refreshMember(group, this.host.pod(id), id)) changed.add(group.key);
        }
      }
    }
    return changed;
  }

  /** Visits the groups whose scope covers a namespace's pods (each once). */
  private eachCandidate(namespace: string, visit: (group: GroupRecord) => void): void {
    const inNamespace = this.byNamespace.get(namespace);
    if (inNamespace) for (const group of inNamespace) visit(group);
    for (const group of this.addressGroups) visit(group);
    const entries = this.selectorsOfNamespace.get(namespace);
    if (entries) for (const entry of entries) for (const group of entry.groups) visit(group);
  }

  /** Brings one pod's membership of one group up to date; true when it changed. */
  private refreshMember(group: GroupRecord, pod: Endpoint | undefined, id = pod?.id): boolean {
    if (!id) return false;
    const current = group.members.get(id);
    const verdict = pod
      ? groupAdmits(group.spec, pod, this.host.namespaceLabels(pod.namespace))
      : NOT_ADMITTED;
    if (verdict === NOT_ADMITTED || !pod) {
      if (!current) return false;
      group.members.delete(id);
      group.countAddresses(current, -1);
      if (countPort(group.ports, current.port, -1)) this.partitionChanged(group.key);
      this.memberChanged(id);
      return true;
    }
    const ipBlock = group.spec.ipBlock;
    const ips = ipBlock ? pod.ips.filter((ip) => ipBlock.cidr.some((c) => cidrContains(c, ip))) : pod.ips;
    const member: GroupMember = verdict === ADMITTED ? { pod: id, ips } : { pod: id, ips, port: verdict };
    if (current && sameMember(current, member)) return false;
    const removed = countPort(group.ports, current?.port, -1);
    const added = countPort(group.ports, member.port, 1);
    if (removed || added) this.partitionChanged(group.key);
    group.members.set(id, member);
    group.countAddresses(current, -1);
    group.countAddresses(member, 1);
    this.memberChanged(id);
    return true;
  }

  /** Entries by the label keys their selector reads; keyless ones can match a namespace without keys. */
  private indexEntryKeys(entry: NamespaceSelectorEntry, add: boolean): void {
    const requirements = entry.selector.requirements;
    for (const r of requirements) {
      let set = this.entriesByKey.get(r.key);
      if (!set) this.entriesByKey.set(r.key, (set = new Set<NamespaceSelectorEntry>()));
      if (add) set.add(entry);
      else set.delete(entry);
    }
    const needsKey = requirements.some((r) => r.operator === 'In' || r.operator === 'Exists');
    if (!needsKey) {
      if (add) this.keylessEntries.add(entry);
      else this.keylessEntries.delete(entry);
    }
  }

  private partitionChanged(key: string): void {
    this.partitionVersion++;
    if (!this.batching) this.partitionChanges.add(key);
  }

  private memberChanged(pod: string): void {
    if (!this.batching) this.memberChanges.add(pod);
  }

  /**
   * Admits the pods that can be members of a new group, found through the indexes (a loop, not
   * a generator: a resync creates tens of thousands of groups).
   */
  private admitScope(group: GroupRecord): void {
    const { spec } = group;
    if (spec.ipBlock) {
      for (const pod of this.host.allPods()) this.refreshMember(group, pod);
      return;
    }
    if (spec.namespace !== undefined) {
      this.admitNamespace(group, spec.namespace);
      return;
    }
    const entry = this.byNamespaceSelector.get(spec.namespaceSelector?.key ?? '');
    if (!this.scopes) {
      for (const namespace of entry?.namespaces ?? []) this.admitNamespace(group, namespace);
      return;
    }
    const scopeKey = `${spec.namespaceSelector?.key ?? ''}\u0000${spec.podSelector?.key ?? ''}`;
    let scope = this.scopes.get(scopeKey);
    if (!scope) {
      scope = { pods: [], members: [] };
      for (const namespace of entry?.namespaces ?? []) this.scopeOf(spec.podSelector, namespace, scope);
      this.scopes.set(scopeKey, scope);
    }
    const named = spec.namedPort;
    const { pods, members } = scope;
    for (let i = 0; i < pods.length; i++) {
      const pod = pods[i] as Endpoint;
      if (!named) {
        this.admitMember(group, members[i] as GroupMember, undefined);
        continue;
      }
      const port = namedPortOf(pod, named);
      if (port !== undefined) this.admitMember(group, { pod: pod.id, ips: pod.ips, port }, port);
    }
  }

  /** A scope's pods in one namespace, in the order `admitNamespace` visits them. */
  private scopeOf(selector: LabelSelector | undefined, namespace: string, scope: ScopeMembers): void {
    this.eachSelected(namespace, selector, (pod) => {
      if (pod.ips.length === 0 || pod.hostNetwork) return;
      scope.pods.push(pod);
      scope.members.push({ pod: pod.id, ips: pod.ips });
    });
  }

  /**
   * Admits a new group's members in one namespace of its scope (the namespace matches it); each
   * member is added without asking again what the scope already answered.
   */
  private admitNamespace(group: GroupRecord, namespace: string): void {
    const named = group.spec.namedPort;
    if (named && !this.namedPorts.get(namespace)?.has(`${named.name}/${named.protocol}`)) return;
    this.eachSelected(namespace, group.spec.podSelector, (pod) => this.addMember(group, pod, pod.id));
  }

  /**
   * The pods of a namespace the pod selector selects (none: every pod), found through the label
   * sets: the selector is asked once per set, whose members share their labels.
   */
  private eachSelected(
    namespace: string,
    selector: LabelSelector | undefined,
    visit: (pod: Endpoint) => void,
  ): void {
    const sets = selector
      ? this.host.podLabelSets.candidates(namespace, selector)
      : this.host.podLabelSets.all(namespace);
    for (const set of sets) {
      if (selector && !selectorMatches(selector, set.labels)) continue;
      for (const id of set.members) {
        const pod = this.host.pod(id);
        if (pod) visit(pod);
      }
    }
  }

  /** A new group's member whose namespace and labels match: its addresses and named port decide. */
  private addMember(group: GroupRecord, pod: Endpoint, id: string): void {
    if (pod.ips.length === 0 || pod.hostNetwork) return;
    const named = group.spec.namedPort;
    const port = named ? namedPortOf(pod, named) : undefined;
    if (named && port === undefined) return;
    const member: GroupMember =
      port === undefined ? { pod: id, ips: pod.ips } : { pod: id, ips: pod.ips, port };
    this.admitMember(group, member, port);
  }

  /** Records a new group's member (members are never changed in place: groups may share them). */
  private admitMember(group: GroupRecord, member: GroupMember, port: number | undefined): void {
    group.members.set(member.pod, member);
    if (countPort(group.ports, port, 1)) this.partitionChanged(group.key);
    group.countAddresses(member, 1);
    this.memberChanged(member.pod);
  }

  private countNamedPorts(pod: Endpoint, delta: number): void {
    for (const port of pod.ports) {
      if (port.name === undefined) continue;
      let counts = this.namedPorts.get(pod.namespace);
      if (!counts) this.namedPorts.set(pod.namespace, (counts = new Map<string, number>()));
      const key = `${port.name}/${port.protocol}`;
      const next = (counts.get(key) ?? 0) + delta;
      if (next > 0) counts.set(key, next);
      else counts.delete(key);
      if (counts.size === 0) this.namedPorts.delete(pod.namespace);
    }
  }

  private indexGroup(group: GroupRecord): void {
    const { spec } = group;
    if (spec.ipBlock) this.addressGroups.add(group);
    else if (spec.namespace !== undefined) addTo(this.byNamespace, spec.namespace, group);
    else if (spec.namespaceSelector) {
      let entry = this.byNamespaceSelector.get(spec.namespaceSelector.key);
      if (!entry) {
        entry = { selector: spec.namespaceSelector, groups: new Set(), namespaces: new Set() };
        this.byNamespaceSelector.set(spec.namespaceSelector.key, entry);
        this.indexEntryKeys(entry, true);
        for (const set of this.host.namespaceLabelSets.candidates('', spec.namespaceSelector)) {
          if (!selectorMatches(spec.namespaceSelector, set.labels)) continue;
          for (const namespace of set.members) {
            entry.namespaces.add(namespace);
            addTo(this.selectorsOfNamespace, namespace, entry);
          }
        }
      }
      entry.groups.add(group);
    }
  }

  private unindexGroup(group: GroupRecord): void {
    const { spec } = group;
    if (spec.ipBlock) this.addressGroups.delete(group);
    else if (spec.namespace !== undefined) this.byNamespace.get(spec.namespace)?.delete(group);
    else if (spec.namespaceSelector) {
      const entry = this.byNamespaceSelector.get(spec.namespaceSelector.key);
      if (!entry) return;
      entry.groups.delete(group);
      if (entry.groups.size > 0) return;
      this.byNamespaceSelector.delete(spec.namespaceSelector.key);
      this.indexEntryKeys(entry, false);
      for (const namespace of entry.namespaces) this.selectorsOfNamespace.get(namespace)?.delete(entry);
    }
  }
}

function sameMember(a: GroupMember, b: GroupMember): boolean {
  return (
    a.port === b.port &&
    a.ips.length === b.ips.length &&
    a.ips.every((ip, i) => ip.family === b.ips[i]?.family && ip.value === b.ips[i]?.value)
  );
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}
