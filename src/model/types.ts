/**
 * The normalized object model every layer shares. Ingest produces these; nothing downstream ever
 * sees raw Kubernetes JSON. Invalid states are unrepresentable here: selectors are canonical,
 * CIDRs are masked and parsed, protocols are defaulted, policyTypes are resolved.
 */
import type { Cidr, IpAddress } from '../net/ip.ts';
import type { LabelSelector } from './selector.ts';

export type { LabelSelector, LabelRequirement, SelectorOperator } from './selector.ts';
export type { Diagnostic, DiagnosticCode, Severity } from './diagnostics.ts';
export type * from './cluster-policy.ts';
import type { ClusterPolicy, ClusterPolicyKind, ClusterSubject } from './cluster-policy.ts';

/** The seed proposal's namespace annotation for ingress isolation (`{"ingress":{"isolation":"DefaultDeny"}}`). */
export const LEGACY_ISOLATION_ANNOTATION = 'net.beta.kubernetes.io/network-policy';
/** The label the API server puts on every namespace, holding its name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
/**
 * Marks a NetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy or ClusterNetworkPolicy
 * staged (audit mode): `"true"` (any value but `"false"`). A staged policy is never enforced and
 * answers about the cluster leave it out; the agent evaluates it against real flows
 * (`palisade flows --staged`).
 */
export const STAGED_ANNOTATION = 'palisade.dev/staged';

export { PROTOCOLS, type Labels, type Protocol, type SourceLocation } from './basics.ts';
import type { Labels, Protocol, SourceLocation } from './basics.ts';

/** Which policy semantics the evaluator applies. */
export type Semantics = 'v1' | 'v1beta1-proposal';

export interface Namespace {
  readonly name: string;
  readonly labels: Labels;
  /** True when no Namespace object was given and one was made up from a reference to it. */
  readonly implicit: boolean;
  /** The seed proposal's `net.beta.kubernetes.io/network-policy` ingress isolation, if set. */
  readonly legacyIngressIsolation?: 'DefaultDeny';
  readonly location?: SourceLocation;
}

export const WORKLOAD_KINDS = [
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'ReplicaSet',
  'ReplicationController',
  'Job',
  'CronJob',
] as const;
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];
export type EndpointKind = 'Pod' | WorkloadKind;

/**
 * The workload an endpoint belongs to: a pod's top-level owner, found through
 * `metadata.ownerReferences` (Pod → ReplicaSet → Deployment, Pod → Job → CronJob…), or the
 * workload whose template an endpoint stands for. The kind is any the owner reference names
 * (operators own pods too), so it is a string, not only a WorkloadKind.
 */
export interface WorkloadRef {
  readonly kind: string;
  readonly name: string;
}

export interface ContainerPort {
  readonly name?: string;
  readonly port: number;
  readonly protocol: Protocol;
}

/**
 * Something traffic can come from or go to inside the cluster: a Pod, or a workload whose pod
 * template stands for the pods it will create (no IP known).
 */
export interface Endpoint {
  /** Display id: `ns/name`, or `ns/name[Kind]` when a Pod of the same name exists. */
  readonly id: string;
  readonly kind: EndpointKind;
  readonly namespace: string;
  readonly name: string;
  readonly labels: Labels;
  /** Canonical addresses; the node's for hostNetwork pods; empty for workloads. */
  readonly ips: readonly IpAddress[];
  readonly ports: readonly ContainerPort[];
  /** hostNetwork pods share the node's address and are not subject to NetworkPolicy. */
  readonly hostNetwork: boolean;
  readonly node?: string;
  /** The owning workload (same namespace); absent for a pod no workload owns. */
  readonly workload?: WorkloadRef;
  /** `spec.serviceAccountName` (Kubernetes defaults it to `default`); Calico and Cilium select by it. */
  readonly serviceAccount?: string;
  /** `metadata.uid` when the source gave one (Neutron ports are tagged with it, as Kuryr does). */
  readonly uid?: string;
  readonly location?: SourceLocation;
  /**
   * Set on a pseudo-endpoint standing for pods the input does not hold (the ingress controller,
   * analysis/ingress-controller.ts): policy judges a connection from it at the destination only.
   */
  readonly pseudo?: 'ingress-controller';
}

/**
 * A node: from a Node object (labels, `status.addresses`), and from pods' `spec.nodeName` and
 * `status.hostIP(s)` when no Node object is given (then it has no labels).
 */
export interface NodeInfo {
  readonly name: string;
  readonly addresses: readonly IpAddress[];
  readonly labels: Labels;
  /** True when a Node object defined it (so its labels are known). */
  readonly declared: boolean;
}

export interface SelectorPeer {
  readonly type: 'selector';
  /** Absent: every pod (in the selected namespaces, or the policy's own namespace). */
  readonly podSelector?: LabelSelector;
  /** Absent: the policy's own namespace only. */
  readonly namespaceSelector?: LabelSelector;
}

export interface IpBlockPeer {
  readonly type: 'ipBlock';
  readonly cidr: Cidr;
  readonly except: readonly Cidr[];
}

export type Peer = SelectorPeer | IpBlockPeer;

export interface PolicyPort {
  readonly protocol: Protocol;
  /** Absent: every port of the protocol. A string is a named container port. */
  readonly port?: number | string;
  /** Last port of a range starting at `port` (numeric `port` only). */
  readonly endPort?: number;
}

export interface PolicyRule {
  /** Position in the policy's ingress or egress list, for explanations. */
  readonly index: number;
  /** `undefined` when the field was absent; an empty array when given as `[]`. */
  readonly peers: readonly Peer[] | undefined;
  readonly ports: readonly PolicyPort[] | undefined;
}

export type NetworkPolicyApiVersion = 'networking.k8s.io/v1' | 'extensions/v1beta1';

export interface NetworkPolicy {
  readonly apiVersion: NetworkPolicyApiVersion;
  readonly namespace: string;
  readonly name: string;
  readonly podSelector: LabelSelector;
  /** Resolved policyTypes: explicit, or defaulted (Ingress, plus Egress when egress rules exist). */
  readonly affectsIngress: boolean;
  readonly affectsEgress: boolean;
  readonly policyTypesExplicit: boolean;
  readonly ingress: readonly PolicyRule[];
  readonly egress: readonly PolicyRule[];
  /** `metadata.uid` and `metadata.generation` when the source gave them (Kuryr tags its security groups with both). */
  readonly uid?: string;
  readonly generation?: number;
  readonly location?: SourceLocation;
}

/**
 * A network policy dropped as invalid, kept as far as it could be read: `check` and `explain`
 * say when it would have selected the endpoint they answer for (issue 19 §1.5) — the verdict
 * ignores it, as the API server would have refused it. Namespaced (Kubernetes', Calico's or
 * Cilium's NetworkPolicy) or cluster-scoped (Calico's GlobalNetworkPolicy, Cilium's clusterwide
 * policy, AdminNetworkPolicy and its kin).
 */
export type RejectedPolicy = RejectedNamespacedPolicy | RejectedClusterPolicy;

interface RejectedCommon {
  readonly name: string;
  /** The directions it would have isolated (as policyTypes say, or defaulted). */
  readonly affectsIngress: boolean;
  readonly affectsEgress: boolean;
  /** The first error that dropped it, e.g. `spec.ingress[0].from[0].ipBlock.cidr: …`. */
  readonly problem: string;
  readonly location?: SourceLocation;
}

/** A NetworkPolicy of one namespace: the pods of its namespace its pod selector selects. */
export interface RejectedNamespacedPolicy extends RejectedCommon {
  readonly scope: 'namespace';
  readonly namespace: string;
  /** A Calico or Cilium NetworkPolicy (named `calico/ns/name`, `cilium/ns/name`); absent: Kubernetes'. */
  readonly engine?: 'calico' | 'cilium';
  /** Undefined when the pod selector itself was invalid (it might select anything). */
  readonly podSelector: LabelSelector | undefined;
  /**
   * A Calico selector of alternatives (`||`) on pod labels only: the pods any of these selects
   * (`podSelector` is then undefined).
   */
  readonly anyOf?: readonly LabelSelector[];
}

/** A cluster-scoped policy: named as explanations name its kind (`gnp/x`, `ccnp/x`, `anp/x`, …). */
export interface RejectedClusterPolicy extends RejectedCommon {
  readonly scope: 'cluster';
  readonly clusterKind: ClusterPolicyKind;
  /**
   * Its subjects (namespaces, and pods in them), as far as they could be read; undefined when
   * they were invalid too (it might select any pod).
   */
  readonly subjects: readonly ClusterSubject[] | undefined;
}

/** One port of a Service: what clients connect to (`port`) and where the backend listens (`targetPort`). */
export interface ServicePort {
  readonly name?: string;
  readonly protocol: Protocol;
  readonly port: number;
  /** A number, or the name of a container port of each backend (resolved per pod). */
  readonly targetPort: number | string;
}

/**
 * A Service: a name for the pods its selector matches in its namespace (its backends) and the
 * ports it maps to theirs. Policy never names Services — it sees the backend pods and their
 * target ports — so `check --to ns/name[Service]` answers for those.
 */
export interface Service {
  readonly namespace: string;
  readonly name: string;
  /** Absent: the Service has no selector (its endpoints are managed by hand; Palisade does not read them). */
  readonly selector?: Labels;
  readonly ports: readonly ServicePort[];
  readonly location?: SourceLocation;
}

/**
 * How an Ingress or Route backend names the Service port: an Ingress by the Service port's
 * number or name; a Route's `port.targetPort` by the Service port's name or its target port's
 * number. Absent (a Route without `port`): every port of the Service.
 */
export type IngressPortRef =
  | { readonly by: 'port'; readonly port: number | string }
  | { readonly by: 'target'; readonly port: number | string };

/** One backend of an Ingress or Route: a Service of the object's namespace, and which of its ports. */
export interface IngressBackend {
  readonly service: string;
  readonly port?: IngressPortRef;
  readonly location?: SourceLocation;
}

/**
 * An Ingress (networking.k8s.io/v1) or OpenShift Route: the ingress controller forwards to the
 * pods behind its backends' Services, on their target ports. Policy sees that connection as one
 * from the controller's pods to the backends (analysis/ingress-controller.ts).
 */
export interface IngressRoute {
  readonly kind: 'Ingress' | 'Route';
  readonly namespace: string;
  readonly name: string;
  readonly backends: readonly IngressBackend[];
  readonly location?: SourceLocation;
}

/** A complete, validated snapshot of what policy analysis needs. */
export interface Cluster {
  readonly namespaces: ReadonlyMap<string, Namespace>;
  readonly endpoints: readonly Endpoint[];
  readonly policies: readonly NetworkPolicy[];
  /** AdminNetworkPolicy, BaselineAdminNetworkPolicy and ClusterNetworkPolicy, in precedence order. */
  readonly clusterPolicies: readonly ClusterPolicy[];
  readonly nodes: ReadonlyMap<string, NodeInfo>;
  /** Network policies dropped as invalid, of any kind (from files; absent when none or not tracked). */
  readonly rejectedPolicies?: readonly RejectedPolicy[];
  /** Objects holding network policy Palisade does not evaluate (absent when none): never silent. */
  readonly unevaluated?: readonly UnevaluatedPolicy[];
  /** Services, by namespace and name (absent when none). */
  readonly services?: readonly Service[];
  /** Ingress and Route objects, by namespace and name (absent when none). */
  readonly ingresses?: readonly IngressRoute[];
  /**
   * Policies marked staged (`STAGED_ANNOTATION`), apart from the enforced ones above: no
   * datapath enforces them and no answer about the cluster includes them (absent when none).
   */
  readonly staged?: StagedPolicies;
}

/** Staged policies: what the enforced set would become, evaluated against flows only. */
export interface StagedPolicies {
  readonly policies: readonly NetworkPolicy[];
  /** In precedence order, like `Cluster.clusterPolicies`. */
  readonly clusterPolicies: readonly ClusterPolicy[];
}

/**
 * An object that holds network policy of an engine Palisade does not evaluate (Antrea's, OVN's,
 * Istio's AuthorizationPolicy…), or a Calico or Cilium policy (or one of its rules) whose meaning
 * Palisade cannot analyse: answers say the input holds it.
 */
export interface UnevaluatedPolicy {
  /** `Kind ns/name` as the input spells it. */
  readonly object: string;
  /** What is not evaluated and what is assumed instead (the diagnostic's message). */
  readonly reason: string;
  readonly location?: SourceLocation;
  /** Only part of a rule is left out (an L7 match, `toFQDNs`, …): the rest of the policy is evaluated. */
  readonly part?: true;
}

export function policyKey(policy: Pick<NetworkPolicy, 'namespace' | 'name'>): string {
  return `${policy.namespace}/${policy.name}`;
}
