/**
 * Values read from etcd into model objects. The reflector validated every value with ingest's
 * decoders before writing it, but whoever else could write to etcd may have left anything there,
 * so `readValue` takes nothing on trust: a value that cannot be read is a reason, never an
 * exception or a deletion. For what the reflector writes it is fast: pods and namespaces — nine in ten values
 * of a large cluster — take a fast path that maps the reduced JSON straight onto the model
 * (about a tenth of the full decoder's cost: no schema, no name and label syntax checks), and
 * anything that is not exactly the reduced form the reflector writes (another kind, an
 * annotation, init containers, a finished pod, an address that does not parse) goes through the
 * full decoder, diagnostics and all. A property test holds the fast path to `decodeValue`.
 */
import { controllerOf } from '../ingest/index.ts';
import type { DecodedObject } from '../ingest/types.ts';
import { formatIp, parseIp, type IpAddress } from '../net/ip.ts';
import { NAMESPACE_NAME_LABEL, type ContainerPort, type Endpoint } from '../model/types.ts';
import type { Diagnostic } from '../model/types.ts';
import { decodeParsed, type DecodedValue } from '../reflected/index.ts';

type Json = Record<string, unknown>;

/**
 * Largest value the agent reads, in characters: twice etcd's default request limit (1.5 MiB). The
 * reflector's reduced objects are a few hundred bytes; anything near this was not written by it.
 */
export const MAX_VALUE_CHARS = 3 * 1024 * 1024;
/** Deepest nesting the agent decodes: Kubernetes objects are a dozen levels deep at most. */
const MAX_VALUE_DEPTH = 64;

/** A value as the agent reads it: a model object, or why it cannot be read (never a throw). */
type ValueRead =
  | { readonly ok: true; readonly object: DecodedObject; readonly diagnostics: readonly Diagnostic[] }
  | { readonly ok: false; readonly reason: string; readonly diagnostics: readonly Diagnostic[] };

/**
 * Reads one value for the agent, whatever it holds: too large, not JSON, not an object, nested
 * deeper than any object (the decoders recurse: 200,000 levels overflowed the stack), an object
 * the decoders reject, or one that throws in them — each is a reason, never an exception, so one
 * hostile value can neither stop its batch nor be mistaken for a deletion.
 */
export function readValue(key: string, value: string): ValueRead {
  if (value.length > MAX_VALUE_CHARS)
    return unreadable(
      `the value has ${value.length} characters, more than the ${MAX_VALUE_CHARS} an object may have`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    return unreadable(`the value is not valid JSON (${(error as Error).message})`);
  }
  if (!isObject(parsed)) return unreadable('the value is not a JSON object');
  const fast = fastDecode(key, parsed);
  if (fast) return { ok: true, object: fast, diagnostics: [] };
  if (deeperThan(parsed, MAX_VALUE_DEPTH))
    return unreadable(`the value is nested deeper than ${MAX_VALUE_DEPTH} levels`);
  let decoded: DecodedValue;
  try {
    decoded = decodeParsed(key, parsed);
  } catch (error) {
    return unreadable(`the decoder failed on the value (${(error as Error).message})`);
  }
  if (decoded.object) return { ok: true, object: decoded.object, diagnostics: decoded.diagnostics };
  const first = decoded.diagnostics.find((d) => d.severity === 'error') ?? decoded.diagnostics[0];
  return unreadable(
    first ? `${first.code}: ${first.message}` : 'not an object Palisade reads',
    decoded.diagnostics,
  );
}

function unreadable(reason: string, diagnostics: readonly Diagnostic[] = []): ValueRead {
  return { ok: false, reason, diagnostics };
}

/** Whether any value in `root` lies more than `limit` levels down (iteratively: no recursion to overflow). */
function deeperThan(root: object, limit: number): boolean {
  const stack: [object, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    for (const child of Object.values(value))
      if (child !== null && typeof child === 'object') {
        if (depth + 1 > limit) return true;
        stack.push([child as object, depth + 1]);
      }
  }
  return false;
}

/** The model object for a reduced Pod or Namespace, or undefined to take the full decoder. */
export function fastDecode(key: string, value: Json): DecodedObject | undefined {
  if (value.apiVersion !== 'v1') return undefined;
  if (value.kind === 'Pod') return fastPod(key, value);
  if (value.kind === 'Namespace') return fastNamespace(key, value);
  return undefined;
}

function fastNamespace(key: string, value: Json): DecodedObject | undefined {
  const metadata = value.metadata;
  if (!isObject(metadata) || !onlyKeys(metadata, NAMESPACE_METADATA)) return undefined;
  const name = metadata.name;
  if (typeof name !== 'string' || name === '') return undefined;
  const labels = stringMap(metadata.labels);
  if (!labels) return undefined;
  labels[NAMESPACE_NAME_LABEL] = name;
  return {
    kind: 'Namespace',
    namespace: { name, labels, implicit: false, location: { file: key, line: 0, column: 0 } },
  };
}

function fastPod(key: string, value: Json): DecodedObject | undefined {
  const { metadata, spec, status } = value;
  if (!isObject(metadata) || !onlyKeys(metadata, POD_METADATA)) return undefined;
  const { name, namespace } = metadata;
  if (typeof name !== 'string' || name === '' || typeof namespace !== 'string' || namespace === '')
    return undefined;
  const labels = stringMap(metadata.labels);
  if (!labels) return undefined;
  let owner: Endpoint['workload'];
  if (metadata.ownerReferences !== undefined) {
    const references = metadata.ownerReferences;
    if (!Array.isArray(references) || !references.every(isOwnerReference)) return undefined;
    owner = controllerOf(references);
  }
  if (spec !== undefined && (!isObject(spec) || !onlyKeys(spec, POD_SPEC))) return undefined;
  const podSpec = spec ?? {};
  const nodeName = podSpec.nodeName;
  if (nodeName !== undefined && typeof nodeName !== 'string') return undefined;
  const hostNetworkField = podSpec.hostNetwork;
  if (hostNetworkField !== undefined && typeof hostNetworkField !== 'boolean') return undefined;
  const ports = containerPorts(podSpec.containers);
  if (!ports) return undefined;
  if (status !== undefined && (!isObject(status) || !onlyKeys(status, POD_STATUS))) return undefined;
  const podStatus = status ?? {};
  const phase = podStatus.phase;
  if (phase !== undefined && (typeof phase !== 'string' || phase === 'Succeeded' || phase === 'Failed'))
    return undefined;
  const podIps = addresses(podStatus.podIPs, podStatus.podIP);
  const hostIps = addresses(podStatus.hostIPs, podStatus.hostIP);
  if (!podIps || !hostIps) return undefined;
  const hostNetwork = hostNetworkField === true;
  const endpoint: Omit<Endpoint, 'id'> = {
    kind: 'Pod',
    namespace,
    name,
    labels,
    ips: hostNetwork && podIps.length === 0 ? hostIps : podIps,
    ports,
    hostNetwork,
    ...(nodeName ? { node: nodeName } : {}),
    location: { file: key, line: 0, column: 0 },
  };
  const hostTexts = hostIps.map(formatIp);
  return owner
    ? { kind: 'Endpoint', endpoint, hostIps: hostTexts, owner }
    : { kind: 'Endpoint', endpoint, hostIps: hostTexts };
}

const NAMESPACE_METADATA = new Set(['name', 'labels']);
const POD_METADATA = new Set(['name', 'namespace', 'labels', 'ownerReferences']);
const POD_SPEC = new Set(['nodeName', 'hostNetwork', 'containers']);
const POD_STATUS = new Set(['phase', 'podIP', 'podIPs', 'hostIP', 'hostIPs']);
const CONTAINER = new Set(['name', 'restartPolicy', 'ports']);
const PORT = new Set(['name', 'containerPort', 'protocol']);

/** Every container's ports in order, or undefined when any is not the plain reduced form. */
function containerPorts(containers: unknown): ContainerPort[] | undefined {
  const ports: ContainerPort[] = [];
  if (containers === undefined) return ports;
  if (!Array.isArray(containers)) return undefined;
  for (const container of containers) {
    if (!isObject(container) || !onlyKeys(container, CONTAINER)) return undefined;
    if (container.ports === undefined) continue;
    if (!Array.isArray(container.ports)) return undefined;
    for (const port of container.ports) {
      if (!isObject(port) || !onlyKeys(port, PORT)) return undefined;
      const number = port.containerPort;
      if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > 65535)
        return undefined;
      const protocol = port.protocol === undefined ? 'TCP' : port.protocol;
      if (protocol !== 'TCP' && protocol !== 'UDP' && protocol !== 'SCTP') return undefined;
      if (port.name !== undefined && (typeof port.name !== 'string' || port.name === '')) return undefined;
      ports.push(
        port.name
          ? { name: port.name, port: number, protocol: protocol }
          : { port: number, protocol: protocol },
      );
    }
  }
  return ports.slice();
}

/** `podIPs` (or `podIP` when the list is empty) parsed and de-duplicated, as the decoder does. */
function addresses(list: unknown, single: unknown): IpAddress[] | undefined {
  let texts: unknown[];
  if (Array.isArray(list) && list.length > 0) {
    texts = [];
    for (const entry of list) {
      if (!isObject(entry) || !onlyKeys(entry, IP_ENTRY)) return undefined;
      texts.push(entry.ip);
    }
  } else if (list !== undefined && !Array.isArray(list)) return undefined;
  else if (single === undefined || single === '') texts = [];
  else texts = [single];
  const result: IpAddress[] = [];
  for (const text of texts) {
    if (typeof text !== 'string') return undefined;
    const parsed = parseIp(text);
    if (!parsed.ok || parsed.problems.length > 0) return undefined;
    if (!result.some((ip) => ip.family === parsed.value.family && ip.value === parsed.value.value))
      result.push(parsed.value);
  }
  return result.slice();
}
const IP_ENTRY = new Set(['ip']);

function isOwnerReference(value: unknown): value is { kind?: string; name?: string; controller?: boolean } {
  if (!isObject(value)) return false;
  for (const field of ['apiVersion', 'kind', 'name', 'uid'])
    if (value[field] !== undefined && typeof value[field] !== 'string') return false;
  return value.controller === undefined || typeof value.controller === 'boolean';
}

/** A copy of a string map (undefined stays empty), or undefined when a value is not a string. */
function stringMap(value: unknown): Record<string, string> | undefined {
  const result: Record<string, string> = {};
  if (value === undefined) return result;
  if (!isObject(value)) return undefined;
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (typeof v !== 'string') return undefined;
    result[key] = v;
  }
  return result;
}

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function onlyKeys(object: Json, allowed: ReadonlySet<string>): boolean {
  for (const key in object) if (!allowed.has(key)) return false;
  return true;
}
