/**
 * The ingress controller as a peer: what its pods may open to the pods behind Ingress and Route
 * backends. Ingress objects say where the controller forwards (each backend's Service, on the
 * Service port's target port); the backends' ingress policy says whether it may. The controller's
 * own pods are rarely in the input, so by default it stands for "a pod in a namespace of its
 * own", labelled nothing: policy admits it where it admits every pod of every namespace
 * (`namespaceSelector: {}`, Calico's `all()`, Cilium's `cluster` and `all`), and not where it
 * names namespaces or pods by label, or addresses (ipBlock, `nets`, CIDRs: the controller has none
 * in the input). `--ingress-controller ns[/k=v,…]` places it in a namespace (with that namespace's
 * labels from the input) and gives its pods labels. Only the backends' ingress side is evaluated:
 * the controller's own egress policy is not in question (netpol-analyzer's `{ingress-controller}`
 * is the same pseudo-peer).
 */
import { NAMESPACE_NAME_LABEL, type Cluster, type Endpoint, type Labels } from '../model/types.ts';
import type { Semantics } from '../model/types.ts';
import { ingressServicePorts } from '../model/ingress.ts';
import {
  ALL_PORTS,
  EMPTY_PORTS,
  intersectPorts,
  isNoPorts,
  portSetOf,
  unionPorts,
  type PortSet,
} from '../semantics/index.ts';
import { portListText } from './format/ports-text.ts';
import { rowMembers } from './outside.ts';
import { serviceBackends, targetOn } from './services.ts';
import { SidedEvaluator } from './sided.ts';
import type { Matrix } from './types.ts';

/** How rows, answers and `check --from` name the controller. */
export const INGRESS_CONTROLLER_LABEL = '{ingress-controller}';

/** The namespace the controller stands in when none is named: no Namespace can be called that. */
const OWN_NAMESPACE = '{ingress-controller}';

/** Where the controller's pods are: a namespace (default: one of their own) and their labels. */
export interface IngressControllerPlace {
  readonly namespace?: string;
  readonly labels?: Labels;
}

/** `ns` or `ns/key=value,key=value` (the `--ingress-controller` flag); a message when malformed. */
export function parseIngressControllerPlace(text: string): IngressControllerPlace | string {
  const slash = text.indexOf('/');
  const namespace = slash < 0 ? text : text.slice(0, slash);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace))
    return `--ingress-controller takes NAMESPACE or NAMESPACE/key=value,…, not "${text}"`;
  if (slash < 0) return { namespace };
  const labels: Record<string, string> = {};
  for (const pair of text.slice(slash + 1).split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return `--ingress-controller: "${pair}" is not key=value`;
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return { namespace, labels };
}

/** The controller as an endpoint, and the cluster with its namespace (so namespace selectors can match it). */
export function ingressControllerEndpoint(
  cluster: Cluster,
  place: IngressControllerPlace = {},
): { cluster: Cluster; controller: Endpoint } {
  const namespace = place.namespace ?? OWN_NAMESPACE;
  const controller: Endpoint = {
    id: INGRESS_CONTROLLER_LABEL,
    kind: 'Pod',
    namespace,
    name: INGRESS_CONTROLLER_LABEL,
    labels: place.labels ?? {},
    ips: [],
    ports: [],
    hostNetwork: false,
    pseudo: 'ingress-controller',
  };
  if (cluster.namespaces.has(namespace)) return { cluster, controller };
  const namespaces = new Map(cluster.namespaces);
  // A named namespace the input does not define has the label every namespace has; the
  // controller's own has none (no selector naming a namespace should pick it).
  namespaces.set(namespace, {
    name: namespace,
    labels: place.namespace ? { [NAMESPACE_NAME_LABEL]: namespace } : {},
    implicit: true,
  });
  return { cluster: { ...cluster, namespaces }, controller };
}

/** Per pod behind some Ingress or Route backend: the target ports the controller forwards to on it. */
function ingressForwarding(cluster: Cluster): Map<Endpoint, PortSet> {
  const forwarded = new Map<Endpoint, PortSet>();
  const services = new Map((cluster.services ?? []).map((s) => [`${s.namespace}/${s.name}`, s]));
  for (const ingress of cluster.ingresses ?? [])
    for (const backend of ingress.backends) {
      const service = services.get(`${ingress.namespace}/${backend.service}`);
      if (!service) continue; // INGRESS_SERVICE_UNKNOWN said so
      const ports = ingressServicePorts(service, backend.port);
      for (const pod of serviceBackends(cluster, service)) {
        const targets = ports.flatMap((port) => {
          const number = targetOn(port, pod);
          return number === undefined ? [] : [{ protocol: port.protocol, from: number, to: number }];
        });
        if (targets.length === 0) continue;
        forwarded.set(pod, unionPorts(forwarded.get(pod) ?? EMPTY_PORTS, portSetOf(targets)));
      }
    }
  return forwarded;
}

/** What the controller may open to pods: forwarded by an Ingress or Route, and admitted by their ingress policy. */
export class IngressController {
  readonly controller: Endpoint;
  private readonly forwarded: Map<Endpoint, PortSet>;
  private readonly sided: SidedEvaluator;

  constructor(cluster: Cluster, place: IngressControllerPlace = {}, semantics: Semantics = 'v1') {
    const placed = ingressControllerEndpoint(cluster, place);
    this.controller = placed.controller;
    this.forwarded = ingressForwarding(cluster);
    this.sided = new SidedEvaluator(placed.cluster, semantics);
  }

  /** The ports Ingress objects forward to on this pod (none when it is no backend). */
  forwardedTo(endpoint: Endpoint): PortSet {
    return this.forwarded.get(endpoint) ?? EMPTY_PORTS;
  }

  /** The ports the pod's ingress policy admits from the controller (every port when it is not isolated). */
  admittedBy(endpoint: Endpoint): PortSet {
    return this.sided.sidePorts(
      { kind: 'endpoint', endpoint: this.controller },
      { kind: 'endpoint', endpoint },
      'ingress',
    );
  }

  /** Forwarded and admitted. */
  ports(endpoint: Endpoint): PortSet {
    const forwarded = this.forwardedTo(endpoint);
    if (forwarded === EMPTY_PORTS) return EMPTY_PORTS;
    return intersectPorts(forwarded, this.admittedBy(endpoint));
  }

  /** What the controller may open to every pod of a row (a workload's pods), as the row's cells say. */
  rowPorts(members: readonly Endpoint[]): PortSet {
    if (members.length === 0) return EMPTY_PORTS;
    return members.reduce((ports, e) => intersectPorts(ports, this.ports(e)), ALL_PORTS);
  }
}

/** The ingress controller as a matrix peer: a source only (where it forwards is what Ingress objects say). */
export interface IngressControllerPeer {
  readonly label: string;
  /** Per row: the ports the controller may open to the row's pods. */
  readonly into: readonly PortSet[];
}

/** The controller's connections to a matrix's rows; undefined when the input has no Ingress or Route. */
export function ingressControllerPeer(
  matrix: Matrix,
  cluster: Cluster,
  place: IngressControllerPlace = {},
  semantics: Semantics = 'v1',
): IngressControllerPeer | undefined {
  if (!cluster.ingresses?.length) return undefined;
  const controller = new IngressController(cluster, place, semantics);
  const into = matrix.rows.map((_, r) => controller.rowPorts(rowMembers(matrix, r)));
  return { label: INGRESS_CONTROLLER_LABEL, into };
}

/** Whether a `--from` names the ingress controller (`ingress-controller`, `{ingress-controller}`). */
export function namesIngressController(text: string): boolean {
  return text === 'ingress-controller' || text === INGRESS_CONTROLLER_LABEL;
}

/**
 * For `check --from ingress-controller`: what Ingress and Route objects forward to on these pods,
 * as a note beside policy's verdict (policy may admit the controller where nothing forwards).
 */
export function forwardingNote(cluster: Cluster, destinations: readonly Endpoint[]): string {
  const forwarded = ingressForwarding(cluster);
  const parts = destinations.map((e) => {
    const ports = forwarded.get(e);
    return ports && !isNoPorts(ports) ? `${e.id} on ${portListText(ports)}` : undefined;
  });
  const said = parts.filter((p): p is string => p !== undefined);
  if (said.length === 0)
    return `no Ingress or Route in the input forwards to ${destinations.length === 1 ? (destinations[0] as Endpoint).id : 'these pods'}: the controller opens no connection there`;
  const unique = [...new Set(said)];
  return `Ingress and Route objects forward to ${unique.slice(0, 3).join(', ')}${unique.length > 3 ? `, and ${unique.length - 3} more` : ''}${said.length < parts.length ? ` (not to ${parts.length - said.length} of the pods)` : ''}`;
}
