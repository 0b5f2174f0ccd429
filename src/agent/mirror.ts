/**
 * The agent's copy of the reflected cluster (Contiv's policy cache): etcd's keys under the
 * layout's `k8s/` prefix turned into model objects, and each batch of key changes turned into
 * the pipeline changes that bring the store to what etcd holds — the same cluster `buildCluster`
 * would assemble from those objects (workload attribution, ids, nodes known from pods' host
 * addresses), kept current one change at a time (a property test holds the two equal).
 *
 * Node scope: a NetworkPolicy only ever selects pods of its own namespace, so with `node` set its
 * value is kept as text and decoded only once the namespace has a pod on the node (before that
 * it cannot change anything this node renders). Everything else is decoded on arrival: pods and
 * namespaces decide group membership anywhere, cluster policies select across namespaces.
 *
 * Keys are compared by modification revision, so a relist after compaction turns into exactly
 * the changes that happened in between.
 *
 * A staged policy (`palisade.dev/staged`) is held apart and never becomes a pipeline change: it is
 * in `snapshot().staged` for the flows' staged evaluation only. A policy that gains the mark
 * leaves the pipeline as if deleted; one that loses it enters as if created. A staged key whose
 * new value cannot be read stays staged (its last good version): nothing is enforced for it, and
 * its namespace is not isolated.
 *
 * A value that cannot be read (decode.ts `readValue`: not JSON, too large or deep, rejected by the
 * decoders, or naming another object than its key) never stops its batch and is never taken for
 * a deletion, which would widen what is allowed: the key keeps its last good version. A new
 * NetworkPolicy key that cannot be read stands for a policy isolating every pod of its namespace
 * both ways with no rule (it could have selected any of them; isolating is the narrowest guess);
 * a new key of another kind cannot be guessed and is left out. Either way the key is listed in
 * `unreadable()` until a readable value or a delete replaces it — the agent's degraded phase.
 */
import { sortByPrecedence } from '../model/precedence.ts';
import { clusterPolicyKey } from '../model/cluster-policy.ts';
import type { DecodedObject } from '../ingest/types.ts';
import { formatIp, parseIp, type IpAddress } from '../net/ip.ts';
import {
  policyKey,
  type Cluster,
  type ClusterPolicy,
  type Diagnostic,
  type Endpoint,
  type Namespace,
  type NetworkPolicy,
  type NodeInfo,
} from '../model/types.ts';
import type { PipelineChange } from '../pipeline/index.ts';
import type { KeyLayout } from '../reflected/index.ts';
import { NamespaceEndpoints, type EndpointSource } from './attribution.ts';
import { readValue } from './decode.ts';
import { isolatingPolicy, mismatch } from './key-checks.ts';

/** One key's change: its new value, or undefined when deleted. */
export interface KeyChange {
  readonly key: string;
  readonly value: string | undefined;
  /** The revision that wrote it (deletes: the revision of the delete). */
  readonly modRevision: number;
}

interface MirrorOptions {
  readonly layout: KeyLayout;
  /** Decode NetworkPolicies only for namespaces with a pod on this node (default: all of them). */
  readonly node?: string;
  /** The decoders' diagnostics of values read (warnings of readable ones, errors of unreadable ones). */
  readonly onDiagnostics?: (diagnostics: readonly Diagnostic[]) => void;
  /** A value that cannot be read, with what the key keeps meanwhile. */
  readonly onUnreadable?: (key: UnreadableKey) => void;
}

/** A key whose value cannot be read, and what the mirror holds for it instead. */
export interface UnreadableKey {
  readonly key: string;
  readonly reason: string;
  /** The revision that wrote the value. */
  readonly modRevision: number;
  /**
   * last-good: the key's previous value stays in force; fail-closed: a new NetworkPolicy key
   * stands for isolating its whole namespace; left-out: a new key of another kind is ignored.
   */
  readonly kept: 'last-good' | 'fail-closed' | 'left-out';
}

interface PolicyEntry {
  readonly namespace: string;
  /** The value, until decoded. */
  text: string | undefined;
  /** The revision that wrote the value. */
  modRevision: number;
  /** The policy's key in the pipeline, once there. */
  emitted: NetworkPolicy | undefined;
}

interface NodeUse {
  /** Endpoints naming the node. */
  refs: number;
  /** Host addresses pods report, with how many report each. */
  readonly addresses: Map<string, { readonly ip: IpAddress; count: number }>;
}

const ENDPOINT_KINDS = new Set([
  'Pod',
  'Deployment',
  'ReplicaSet',
  'StatefulSet',
  'DaemonSet',
  'ReplicationController',
  'Job',
  'CronJob',
]);

export class ClusterMirror {
  /** Every key held, with the revision that wrote it. */
  private readonly revisions = new Map<string, number>();
  private readonly namespaces = new Map<string, Namespace>();
  private readonly endpoints = new Map<string, NamespaceEndpoints>();
  /** Per endpoint key, what it contributes (to nodes, to namespace interest). */
  private readonly sources = new Map<string, EndpointSource & { readonly hostIps: readonly string[] }>();
  private readonly policies = new Map<string, PolicyEntry>();
  private readonly policiesByNamespace = new Map<string, Set<string>>();
  private readonly clusterPolicies = new Map<string, ClusterPolicy>();
  /** Staged policies by key: never in the pipeline, only in `snapshot().staged`. */
  private readonly stagedPolicies = new Map<string, NetworkPolicy>();
  private readonly stagedClusterPolicies = new Map<string, ClusterPolicy>();
  private readonly declaredNodes = new Map<string, NodeInfo>();
  private readonly nodeUse = new Map<string, NodeUse>();
  private readonly emittedNodes = new Map<string, NodeInfo>();
  /** Pods on this node, per namespace (node scope). */
  private readonly localPods = new Map<string, number>();
  /** Keys whose value cannot be read. */
  private readonly unreadableKeys = new Map<string, UnreadableKey>();

  constructor(private readonly options: MirrorOptions) {}

  /** Keys held. */
  get size(): number {
    return this.revisions.size;
  }

  /** Policies held as text, not decoded (node scope: their namespaces have no pod here). */
  get deferredPolicies(): number {
    let count = 0;
    for (const entry of this.policies.values()) if (entry.text !== undefined) count++;
    return count;
  }

  /** Keys whose value cannot be read, in key order. */
  unreadable(): UnreadableKey[] {
    return [...this.unreadableKeys.values()].sort((a, b) => compare(a.key, b.key));
  }

  /** The changes a relist at some revision brings: deletes of keys gone, puts of keys written since. */
  relist(kvs: readonly KeyChange[]): KeyChange[] {
    const listed = new Set<string>();
    const changes: KeyChange[] = [];
    let latest = 0;
    for (const kv of kvs) {
      if (kv.value === undefined) continue;
      listed.add(kv.key);
      latest = Math.max(latest, kv.modRevision);
      if (this.revisions.get(kv.key) !== kv.modRevision) changes.push(kv);
    }
    for (const key of this.revisions.keys())
      if (!listed.has(key)) changes.push({ key, value: undefined, modRevision: latest });
    return changes;
  }

  /** Applies key changes; returns the pipeline changes that follow (deletes and upserts). */
  apply(changes: readonly KeyChange[]): PipelineChange[] {
    const out: PipelineChange[] = [];
    const endpointBatches = new Map<string, Map<string, EndpointSource | undefined>>();
    const touchedNodes = new Set<string>();
    const policyKeys: string[] = [];
    const interested = new Set<string>();
    for (const change of changes) {
      const at = this.options.layout.parse(change.key);
      if (!at) continue;
      // A put the mirror holds already (given again after a failed realization), or an older one.
      if (change.value !== undefined && (this.revisions.get(change.key) ?? 0) >= change.modRevision) continue;
      const existed = this.revisions.has(change.key);
      if (change.value === undefined) {
        if (!existed) continue;
        this.revisions.delete(change.key);
        this.unreadableKeys.delete(change.key);
      } else this.revisions.set(change.key, change.modRevision);
      if (at.kind === 'NetworkPolicy') {
        this.setPolicyText(change.key, at.namespace!, change.value, change.modRevision);
        policyKeys.push(change.key);
        continue;
      }
      let decoded: DecodedObject | undefined;
      if (change.value !== undefined) {
        decoded = this.read(change.key, change.value, change.modRevision, at);
        // Unreadable: the key keeps what it held (nothing, for a new key).
        if (!decoded) continue;
      }
      if (ENDPOINT_KINDS.has(at.kind)) {
        const namespace = at.namespace!;
        const entryKey = `${at.kind}/${at.name}`;
        const source =
          decoded?.kind === 'Endpoint'
            ? {
                endpoint: decoded.endpoint,
                hostIps: decoded.hostIps,
                ...(decoded.owner ? { owner: decoded.owner } : {}),
              }
            : undefined;
        this.track(change.key, source, touchedNodes, interested);
        let batch = endpointBatches.get(namespace);
        if (!batch) endpointBatches.set(namespace, (batch = new Map<string, EndpointSource | undefined>()));
        batch.set(entryKey, source);
      } else if (at.kind === 'Namespace') {
        this.setNamespace(at.name, decoded?.kind === 'Namespace' ? decoded.namespace : undefined, out);
      } else if (at.kind === 'Node') {
        if (decoded?.kind === 'Node') this.declaredNodes.set(at.name, decoded.node);
        else this.declaredNodes.delete(at.name);
        touchedNodes.add(at.name);
      } else {
        // Staged: out of the pipeline (a policy made staged leaves enforcement, as if deleted).
        const staged = decoded?.kind === 'Staged' ? decoded.object : undefined;
        if (staged?.kind === 'ClusterPolicy') this.stagedClusterPolicies.set(change.key, staged.policy);
        else this.stagedClusterPolicies.delete(change.key);
        this.setClusterPolicy(
          change.key,
          decoded?.kind === 'ClusterPolicy' ? decoded.policy : undefined,
          out,
        );
      }
    }
    for (const [namespace, batch] of endpointBatches) {
      let space = this.endpoints.get(namespace);
      if (!space) this.endpoints.set(namespace, (space = new NamespaceEndpoints(namespace)));
      const { deleted, upserted } = space.update(batch);
      for (const id of deleted) out.push({ type: 'delete-pod', id });
      for (const pod of upserted) out.push({ type: 'upsert-pod', pod });
      if (space.size === 0) this.endpoints.delete(namespace);
    }
    for (const key of policyKeys) this.syncPolicy(key, out);
    for (const namespace of interested)
      for (const key of this.policiesByNamespace.get(namespace) ?? []) this.syncPolicy(key, out);
    for (const name of touchedNodes) this.syncNode(name, out);
    return out;
  }

  /** The whole cluster as `buildCluster` gives it (implicit namespaces left to the store). */
  snapshot(): Cluster {
    const endpoints: Endpoint[] = [];
    for (const space of this.endpoints.values()) for (const e of space.endpoints()) endpoints.push(e);
    endpoints.sort(
      (a, b) => compare(a.namespace, b.namespace) || compare(a.name, b.name) || compare(a.kind, b.kind),
    );
    const policies: NetworkPolicy[] = [];
    for (const entry of this.policies.values()) if (entry.emitted) policies.push(entry.emitted);
    policies.sort((a, b) => compare(a.namespace, b.namespace) || compare(a.name, b.name));
    const staged = this.stagedPolicies.size + this.stagedClusterPolicies.size > 0;
    return {
      namespaces: new Map([...this.namespaces].sort(([a], [b]) => compare(a, b))),
      endpoints,
      policies,
      clusterPolicies: sortByPrecedence([...this.clusterPolicies.values()]),
      nodes: new Map([...this.emittedNodes].sort(([a], [b]) => compare(a, b))),
      ...(staged
        ? {
            staged: {
              policies: [...this.stagedPolicies.values()].sort(
                (a, b) => compare(a.namespace, b.namespace) || compare(a.name, b.name),
              ),
              clusterPolicies: sortByPrecedence([...this.stagedClusterPolicies.values()]),
            },
          }
        : {}),
    };
  }

  /**
   * The value of `key` as the model object its kind must be, or undefined when it cannot be read
   * (recorded in `unreadable()`, with what the key keeps). A readable value clears the record.
   */
  private read(
    key: string,
    value: string,
    modRevision: number,
    at: { readonly kind: string; readonly namespace?: string; readonly name: string },
    kept: UnreadableKey['kept'] = this.heldBefore(key, at) ? 'last-good' : 'left-out',
  ): DecodedObject | undefined {
    const read = readValue(key, value);
    if (read.diagnostics.length > 0) this.options.onDiagnostics?.(read.diagnostics);
    const reason = read.ok ? mismatch(read.object, at) : read.reason;
    if (reason === undefined && read.ok) {
      this.unreadableKeys.delete(key);
      return read.object;
    }
    const record: UnreadableKey = { key, reason: reason ?? 'unreadable', modRevision, kept };
    this.unreadableKeys.set(key, record);
    this.options.onUnreadable?.(record);
    return undefined;
  }

  /** Whether the pipeline holds something for a key (its last good version). */
  private heldBefore(key: string, at: { readonly kind: string; readonly name: string }): boolean {
    if (ENDPOINT_KINDS.has(at.kind)) return this.sources.has(key);
    if (at.kind === 'Namespace') return this.namespaces.has(at.name);
    if (at.kind === 'Node') return this.declaredNodes.has(at.name);
    // A staged policy is a last good version too: an unreadable value keeps it staged.
    if (at.kind === 'NetworkPolicy')
      return this.policies.get(key)?.emitted !== undefined || this.stagedPolicies.has(key);
    return this.clusterPolicies.has(key) || this.stagedClusterPolicies.has(key);
  }

  private setNamespace(name: string, namespace: Namespace | undefined, out: PipelineChange[]): void {
    if (namespace) {
      this.namespaces.set(name, namespace);
      out.push({ type: 'upsert-namespace', namespace });
    } else if (this.namespaces.delete(name)) {
      out.push({ type: 'delete-namespace', name });
    }
  }

  private setClusterPolicy(key: string, policy: ClusterPolicy | undefined, out: PipelineChange[]): void {
    const before = this.clusterPolicies.get(key);
    if (before && (!policy || clusterPolicyKey(before) !== clusterPolicyKey(policy)))
      out.push({ type: 'delete-cluster-policy', key: clusterPolicyKey(before) });
    if (policy) {
      this.clusterPolicies.set(key, policy);
      out.push({ type: 'upsert-cluster-policy', policy });
    } else this.clusterPolicies.delete(key);
  }

  private setPolicyText(key: string, namespace: string, text: string | undefined, modRevision: number): void {
    const entry = this.policies.get(key);
    if (text === undefined) {
      if (entry) entry.text = undefined;
      return;
    }
    if (entry) {
      entry.text = text;
      entry.modRevision = modRevision;
    } else {
      this.policies.set(key, { namespace, text, modRevision, emitted: undefined });
      let keys = this.policiesByNamespace.get(namespace);
      if (!keys) this.policiesByNamespace.set(namespace, (keys = new Set()));
      keys.add(key);
    }
  }

  /** Brings one policy key's pipeline state to what etcd holds, if its namespace is of interest. */
  private syncPolicy(key: string, out: PipelineChange[]): void {
    const entry = this.policies.get(key);
    if (!entry) return;
    const gone = !this.revisions.has(key);
    if (!gone && !this.wants(entry.namespace)) return;
    let policy: NetworkPolicy | undefined;
    if (!gone && entry.text !== undefined) {
      const name = key.slice(key.lastIndexOf('/') + 1);
      const at = { kind: 'NetworkPolicy', namespace: entry.namespace, name };
      const held = entry.emitted !== undefined || this.stagedPolicies.has(key);
      const decoded = this.read(key, entry.text, entry.modRevision, at, held ? 'last-good' : 'fail-closed');
      entry.text = undefined;
      if (decoded?.kind === 'NetworkPolicy') policy = decoded.policy;
      else if (decoded?.kind === 'Staged' && decoded.object.kind === 'NetworkPolicy')
        this.stagedPolicies.set(key, decoded.object.policy); // not enforced: policy stays undefined
      else if (held)
        return; // unreadable: its last good version stays
      else policy = isolatingPolicy(entry.namespace, name, key);
    } else if (!gone) {
      return; // decoded before and unchanged
    }
    if (gone || policy) this.stagedPolicies.delete(key);
    const before = entry.emitted;
    if (before && (!policy || policyKey(before) !== policyKey(policy)))
      out.push({ type: 'delete-policy', key: policyKey(before) });
    if (policy) out.push({ type: 'upsert-policy', policy });
    entry.emitted = policy;
    if (gone) {
      this.policies.delete(key);
      const keys = this.policiesByNamespace.get(entry.namespace);
      keys?.delete(key);
      if (keys?.size === 0) this.policiesByNamespace.delete(entry.namespace);
    }
  }

  private wants(namespace: string): boolean {
    return this.options.node === undefined || (this.localPods.get(namespace) ?? 0) > 0;
  }

  /** Records what an endpoint object contributes: node references, host addresses, local pods. */
  private track(
    key: string,
    source: (EndpointSource & { readonly hostIps: readonly string[] }) | undefined,
    nodes: Set<string>,
    interested: Set<string>,
  ): void {
    const before = this.sources.get(key);
    if (before) this.contribute(before, -1, nodes, interested);
    if (source) {
      this.sources.set(key, source);
      this.contribute(source, 1, nodes, interested);
    } else this.sources.delete(key);
  }

  private contribute(
    source: EndpointSource & { readonly hostIps: readonly string[] },
    sign: 1 | -1,
    nodes: Set<string>,
    interested: Set<string>,
  ): void {
    const { endpoint } = source;
    if (endpoint.kind === 'Pod' && this.options.node !== undefined && endpoint.node === this.options.node) {
      const count = (this.localPods.get(endpoint.namespace) ?? 0) + sign;
      if (count === 0) this.localPods.delete(endpoint.namespace);
      else this.localPods.set(endpoint.namespace, count);
      if (sign === 1 && count === 1) interested.add(endpoint.namespace);
    }
    const node = endpoint.node;
    if (!node) return;
    let use = this.nodeUse.get(node);
    if (!use) this.nodeUse.set(node, (use = { refs: 0, addresses: new Map() }));
    use.refs += sign;
    for (const text of source.hostIps) {
      const present = use.addresses.get(text);
      if (sign === 1) {
        if (present) present.count++;
        else {
          const parsed = parseIp(text);
          if (parsed.ok) use.addresses.set(text, { ip: parsed.value, count: 1 });
        }
      } else if (present && --present.count === 0) use.addresses.delete(text);
    }
    if (use.refs === 0) this.nodeUse.delete(node);
    nodes.add(node);
  }

  /** A node as `buildCluster` merges it: its Node object's addresses, then those its pods report. */
  private syncNode(name: string, out: PipelineChange[]): void {
    const declared = this.declaredNodes.get(name);
    const use = this.nodeUse.get(name);
    const before = this.emittedNodes.get(name);
    if (!declared && !use) {
      if (before) {
        this.emittedNodes.delete(name);
        out.push({ type: 'delete-node', name });
      }
      return;
    }
    const addresses = [...(declared?.addresses ?? [])];
    const reported = [...(use?.addresses.values() ?? [])]
      .map((a) => a.ip)
      .filter((ip) => !addresses.some((a) => a.family === ip.family && a.value === ip.value))
      .sort((a, b) => a.family - b.family || compare(formatIp(a), formatIp(b)));
    for (const ip of reported) addresses.push(ip);
    const node: NodeInfo = {
      name,
      addresses,
      labels: declared?.labels ?? NO_LABELS,
      declared: declared !== undefined,
    };
    if (before && sameNode(before, node)) return;
    this.emittedNodes.set(name, node);
    out.push({ type: 'upsert-node', node });
  }
}

/**
 * The labels of a node no Node object declares: one object, so a node a pod change leaves as it
 * was compares equal (a fresh `{}` each time made every pod change re-emit its node, and the eBPF
 * renderer rebuild its classifier).
 */
const NO_LABELS: NodeInfo['labels'] = Object.freeze({});

function sameNode(a: NodeInfo, b: NodeInfo): boolean {
  return (
    a.declared === b.declared &&
    a.labels === b.labels &&
    a.addresses.length === b.addresses.length &&
    a.addresses.every((ip, i) => ip.family === b.addresses[i]!.family && ip.value === b.addresses[i]!.value)
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
