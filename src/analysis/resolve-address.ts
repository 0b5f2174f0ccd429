/**
 * Turns what a user types (`ns/pod`, `ns/name[Deployment]`, `ns/Deployment/name`, an IP) into an
 * evaluator address. An IP that belongs to a pod resolves to that pod; a node's IP is marked as
 * the node's.
 */
import { formatIp, parseIp, type IpFamily } from '../net/ip.ts';
import type { Cluster, Endpoint, Service } from '../model/types.ts';
import { findService, serviceBackends, serviceLabel } from './services.ts';
import type { Address } from '../semantics/types.ts';
import { editDistance } from '../util/closest.ts';

export type Resolution =
  | {
      ok: true;
      /** The address; for a workload with several pods, its first pod's. */
      address: Address;
      /** Set when the text named a workload whose pods are in the input: every pod, and the workload's name. */
      workload?: { readonly label: string; readonly members: readonly Endpoint[] };
      /** Set when the text named a Service: its backends are `workload.members`. */
      service?: Service;
      /**
       * Set when the text was an IP address: a packet to or from it has that family, so a
       * dual-stack pod named by one of its addresses is judged over that family only.
       */
      family?: IpFamily;
    }
  | { ok: false; message: string };

export function resolveAddress(cluster: Cluster, text: string): Resolution {
  // `name=IP`: a destination known by its domain name (for domainNames peers). Palisade does
  // not query DNS, so the answer cannot depend on when it is asked; the user says what it resolves to.
  const named = /^([A-Za-z0-9_][-A-Za-z0-9_.]*)=(.+)$/.exec(text);
  if (named) {
    const [, domain, ipText] = named as unknown as [string, string, string];
    const resolved = resolveAddress(cluster, ipText);
    if (!resolved.ok || resolved.address.kind !== 'ip') {
      return {
        ok: false,
        message: `"${text}": after "=" give the IP address ${domain} resolves to (outside the cluster)`,
      };
    }
    return {
      ok: true,
      address: { ...resolved.address, domain: domain.toLowerCase().replace(/\.$/, '') },
      family: resolved.address.ip.family,
    };
  }
  const ip = parseIp(text);
  // Digits and dots only (300.1.1.1, 10.1.1): a mistyped IPv4 address, not a domain name.
  if (!ip.ok && /^[0-9.]+$/.test(text)) {
    const fatal = ip.problems.find((p) => p.fatal);
    return { ok: false, message: fatal?.message ?? `"${text}" is not a valid IP address` };
  }
  // An address with a prefix length (not `cafe/1`, a pod named 1 in namespace cafe).
  if (/^[0-9A-Fa-f.:]+\/[0-9]+$/.test(text) && parseIp(text.slice(0, text.indexOf('/'))).ok) {
    return {
      ok: false,
      message: `"${text}" is a CIDR; a connection is between two addresses, so give one address of it`,
    };
  }
  if (!ip.ok && /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+\.?$/.test(text)) {
    return {
      ok: false,
      message: `"${text}" looks like a domain name; give the address it resolves to as ${text}=IP (Palisade does not query DNS)`,
    };
  }
  if (ip.ok) {
    const pods = cluster.endpoints.filter(
      (e) => !e.hostNetwork && e.ips.some((a) => a.family === ip.value.family && a.value === ip.value.value),
    );
    const family = ip.value.family;
    // Two pods with one address (POD_IP_SHARED): the answer would depend on which one is picked.
    if (pods.length > 1)
      return {
        ok: false,
        message: `${text} is the address of ${pods.length} pods (${pods.map((e) => e.id).join(', ')}); name the pod instead`,
      };
    const pod = pods[0];
    if (pod) return { ok: true, address: { kind: 'endpoint', endpoint: pod }, family };
    for (const node of cluster.nodes.values()) {
      if (node.addresses.some((a) => a.family === ip.value.family && a.value === ip.value.value)) {
        return { ok: true, address: { kind: 'ip', ip: ip.value, node: node.name }, family };
      }
    }
    return { ok: true, address: { kind: 'ip', ip: ip.value }, family };
  }
  const service = findService(cluster, text);
  if (typeof service === 'string') return { ok: false, message: service };
  if (service) {
    const backends = serviceBackends(cluster, service);
    const [first] = backends;
    if (!first)
      return {
        ok: false,
        message: service.selector
          ? `${serviceLabel(service)} selects no pod in the input (selector ${Object.entries(service.selector)
              .map(([k, v]) => `${k}=${v}`)
              .join(',')})`
          : `${serviceLabel(service)} has no selector: its endpoints are kept by hand, which Palisade does not read; name the pods`,
      };
    return {
      ok: true,
      address: { kind: 'endpoint', endpoint: first },
      workload: { label: serviceLabel(service), members: backends },
      service,
    };
  }
  const found = findEndpoints(cluster.endpoints, text);
  if (typeof found === 'string') return { ok: false, message: withServiceHint(cluster, text, found) };
  const first = found.endpoints[0] as Endpoint;
  return found.workload
    ? {
        ok: true,
        address: { kind: 'endpoint', endpoint: first },
        workload: { label: found.workload, members: found.endpoints },
      }
    : { ok: true, address: { kind: 'endpoint', endpoint: first } };
}

/**
 * A Service of that name (`ns/name`, or a bare name in any namespace) named the way the answers
 * take it, when no pod or workload has the name: `--to shop/api-svc` meant the Service.
 */
function withServiceHint(cluster: Cluster, text: string, message: string): string {
  const slash = text.indexOf('/');
  const services = (cluster.services ?? []).filter((service) =>
    slash < 0
      ? service.name === text
      : service.namespace === text.slice(0, slash) && service.name === text.slice(slash + 1),
  );
  if (services.length === 0 || !message.startsWith('no pod or workload')) return message;
  return `${message}; did you mean the Service ${services.slice(0, 5).map(serviceLabel).join(', ')}?`;
}

/** Finds one endpoint by id, or returns a message saying why none (or several) match. */
export function findEndpoint(endpoints: readonly Endpoint[], text: string): Endpoint | string {
  const found = findEndpoints(endpoints, text);
  if (typeof found === 'string') return found;
  if (found.endpoints.length === 1) return found.endpoints[0] as Endpoint;
  return `"${text}" names ${found.workload ?? text}, which has ${found.endpoints.length} pods: ${found.endpoints.map((e) => e.id).join(', ')}`;
}

/**
 * What `ns/name`, `ns/name[Kind]` or `ns/Kind/name` names: a pod or a template (one endpoint),
 * or a workload whose pods are in the input (its pods, and its label `ns/name[Kind]`). A message
 * when nothing (or more than one thing) matches.
 */
export function findEndpoints(
  endpoints: readonly Endpoint[],
  text: string,
): { endpoints: readonly Endpoint[]; workload?: string } | string {
  const exact = endpoints.find((e) => e.id === text);
  if (exact) return { endpoints: [exact] };
  const kindForm =
    /^([^/]+)\/([A-Za-z]+)\/([^/]+)$/.exec(text) ?? /^([^/]+)\/([^/[]+)\[([A-Za-z]+)\]$/.exec(text);
  let namespace: string;
  let name: string;
  let kind: string | undefined;
  if (kindForm) {
    const [, ns, a, b] = kindForm as unknown as [string, string, string, string];
    namespace = ns;
    [kind, name] = text.includes('[') ? [b, a] : [a, b];
  } else {
    const slash = text.indexOf('/');
    namespace = slash < 0 ? 'default' : text.slice(0, slash);
    name = slash < 0 ? text : text.slice(slash + 1);
  }
  const sameKind = (k: string): boolean => kind === undefined || k.toLowerCase() === kind.toLowerCase();
  const candidates = endpoints.filter(
    (e) => e.namespace === namespace && e.name === name && sameKind(e.kind),
  );
  if (candidates.length === 1) return { endpoints: candidates };
  if (candidates.length > 1) {
    return `"${text}" is ambiguous: ${candidates.map((e) => e.id).join(', ')}`;
  }
  // A workload whose running pods stand for it.
  const members = endpoints.filter(
    (e) =>
      e.kind === 'Pod' && e.namespace === namespace && e.workload?.name === name && sameKind(e.workload.kind),
  );
  const kinds = new Set(members.map((e) => e.workload?.kind));
  if (kinds.size > 1) {
    return `"${text}" is ambiguous: ${[...kinds].map((k) => `${namespace}/${name}[${k}]`).join(', ')}`;
  }
  if (members.length > 0) {
    return { endpoints: members, workload: `${namespace}/${name}[${[...kinds][0]}]` };
  }
  // A bare name (`frontend`) is in namespace default; the same name elsewhere is what was meant.
  const elsewhere = text.includes('/') ? [] : sameNameElsewhere(endpoints, name);
  const near = elsewhere.length > 0 ? elsewhere : nearNames(endpoints, namespace, name);
  const hint = near.length ? ` (did you mean ${near.join(', ')}?)` : '';
  return `no pod or workload "${text}" in the input${hint}; use ns/name, ns/name[Kind] or an IP address`;
}

/** Pods and workloads of this name in any namespace, as `ns/name`. */
function sameNameElsewhere(endpoints: readonly Endpoint[], name: string): string[] {
  const found = new Set<string>();
  for (const e of endpoints) {
    if (e.name === name) found.add(e.id);
    if (e.workload?.name === name) found.add(`${e.namespace}/${name}`);
  }
  return [...found].sort().slice(0, 5);
}

export function addressText(address: Address): string {
  if (address.kind === 'endpoint') return address.endpoint.id;
  return address.domain ? `${address.domain}=${formatIp(address.ip)}` : formatIp(address.ip);
}

/**
 * Names close to a mistyped one — pods' and templates' ids, and the workloads their pods stand
 * for: within two edits of the whole `ns/name` (one for a name of three letters or fewer), or in
 * its namespace and starting with the name typed (`shop/api` for the pods `shop/api-5f6b-…`);
 * the closest first.
 */
function nearNames(endpoints: readonly Endpoint[], namespace: string, name: string): string[] {
  const typed = `${namespace}/${name}`;
  const most = name.length <= 3 ? 1 : 2;
  const near = new Map<string, number>();
  const consider = (id: string, candidateNamespace: string, candidateName: string): void => {
    if (near.has(id)) return;
    // More edits than allowed cannot bridge a longer difference in length: no distance needed.
    const distance =
      Math.abs(id.length - typed.length) <= most ? editDistance(id, typed) : Number.POSITIVE_INFINITY;
    if (
      distance <= most ||
      (candidateNamespace === namespace && name.length > 0 && candidateName.startsWith(name))
    )
      near.set(id, distance);
  };
  for (const e of endpoints) {
    consider(e.id, e.namespace, e.name);
    if (e.workload) consider(`${e.namespace}/${e.workload.name}`, e.namespace, e.workload.name);
  }
  return [...near]
    .sort((a, b) => a[1] - b[1])
    .slice(0, 5)
    .map(([id]) => id);
}
