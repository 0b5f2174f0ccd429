/**
 * Decoded pods in a compact form that crosses from a worker thread to the main thread cheaply:
 * one Int32Array of fields and one small table of distinct strings, instead of a structured clone
 * of 100,000 endpoint objects (which costs about what decoding them does). Only pods decoded
 * without a single diagnostic are written this way; a file holding anything else is decoded on
 * the main thread as before (see decode-offload.ts), so diagnostics never cross.
 *
 * Label maps and port lists equal between pods are made once on the main thread and shared
 * (both are immutable once decoded); address lists stay one per pod, as decoding makes them.
 */
import { formatIp, parseIp, type IpAddress } from '../net/ip.ts';
import type { ContainerPort, Endpoint, Labels, Protocol } from '../model/types.ts';
import type { IdentifiedObject } from './build-cluster.ts';
import type { DecodedObject } from './types.ts';
import { exactArray } from '../util/exact-array.ts';

/** What a worker sends for one file of pods. */
export interface CompactPods {
  readonly count: number;
  readonly fields: Int32Array;
  readonly strings: readonly string[];
}

const NONE = -1;
/** The kinds of shape: a label map (pairs of strings), a port list (name, number, protocol). */
const LABELS = 0;
const PORTS = 1;

/** The fields of a decoded pod, in decodePod's order (with and without a node and a service account). */
const POD_FIELDS = ['kind', 'namespace', 'name', 'labels', 'ips', 'ports', 'hostNetwork'];
const FIELD_SETS = [
  [...POD_FIELDS, 'location'],
  [...POD_FIELDS, 'node', 'location'],
  [...POD_FIELDS, 'serviceAccount', 'location'],
  [...POD_FIELDS, 'node', 'serviceAccount', 'location'],
];

/** Whether the object's own keys are exactly these, in this order (no list of them is made). */
function keysAre(object: object, expected: readonly string[]): boolean {
  let i = 0;
  for (const key in object) {
    if (!Object.hasOwn(object, key) || key !== expected[i]) return false;
    i++;
  }
  return i === expected.length;
}

/** Collects decoded pods field by field; `finish` hands out the compact form. */
export class CompactPodWriter {
  private fields = new Int32Array(1 << 16);
  private length = 0;
  private count = 0;
  private readonly strings: string[] = [];
  private readonly stringIndex = new Map<string, number>();
  /** Label maps and port lists already written, by their content (a list of string/number ids). */
  private readonly shapes = new Map<string, number>();

  /**
   * Writes one decoded object; false when it is not a pod this form can carry exactly (then the
   * caller decodes the whole file on the main thread).
   */
  add(identity: string, object: DecodedObject): boolean {
    if (object.kind !== 'Endpoint' || object.endpoint.kind !== 'Pod') return false;
    const { endpoint, hostIps, owner } = object;
    const location = endpoint.location;
    const fields =
      FIELD_SETS[(endpoint.node === undefined ? 0 : 1) + (endpoint.serviceAccount === undefined ? 0 : 2)];
    if (!fields) return false;
    if (!location || !keysAre(location, LOCATION_FIELDS) || !keysAre(endpoint, fields)) return false;
    // Shapes first: one this pod is the first to use is written before its fields.
    const ports = this.ports(endpoint.ports);
    if (ports === undefined) return false;
    const labels = this.labels(endpoint.labels);
    this.push(this.string(endpoint.namespace));
    this.push(this.string(endpoint.name));
    this.push(identity === `Pod ${endpoint.namespace}/${endpoint.name}` ? NONE : this.string(identity));
    this.push(labels);
    this.push(endpoint.ips.length);
    for (const ip of endpoint.ips) {
      // IPv4 as its number; IPv6 (rare) as its canonical text, parsed again on the other side.
      this.push(ip.family);
      this.push(ip.family === 4 ? Number(ip.value) | 0 : this.string(formatIp(ip)));
    }
    this.push(ports);
    this.push(endpoint.hostNetwork ? 1 : 0);
    this.push(endpoint.node === undefined ? NONE : this.string(endpoint.node));
    this.push(endpoint.serviceAccount === undefined ? NONE : this.string(endpoint.serviceAccount));
    this.push(this.string(location.file));
    this.push(location.line);
    this.push(location.column);
    this.push(hostIps.length);
    for (const ip of hostIps) this.push(this.string(ip));
    this.push(owner ? this.string(owner.kind) : NONE);
    this.push(owner ? this.string(owner.name) : NONE);
    this.count++;
    return true;
  }

  finish(): CompactPods {
    return { count: this.count, fields: this.fields.slice(0, this.length), strings: this.strings };
  }

  private push(value: number): void {
    if (this.length === this.fields.length) {
      const grown = new Int32Array(this.fields.length * 2);
      grown.set(this.fields);
      this.fields = grown;
    }
    this.fields[this.length++] = value;
  }

  private string(text: string): number {
    let index = this.stringIndex.get(text);
    if (index === undefined) {
      index = this.strings.length;
      this.strings.push(text);
      this.stringIndex.set(text, index);
    }
    return index;
  }

  /** A label map as a shape: its content is written once, then referred to by its number. */
  private labels(labels: Labels): number {
    let key = 'l';
    for (const name in labels) key += `${name}\u0000${labels[name]}\u0000`;
    const known = this.shapes.get(key);
    if (known !== undefined) return known;
    const ids: number[] = [];
    for (const name in labels) ids.push(this.string(name), this.string(labels[name] as string));
    return this.shape(key, LABELS, ids);
  }

  /**
   * A port list as a shape; undefined for a port this form does not carry. Pods of one workload
   * follow one another with equal lists: a list equal to the previous pod's (same names, numbers
   * and protocols, no other fields) is its shape without a key being built and looked up.
   */
  private ports(ports: readonly ContainerPort[]): number | undefined {
    const last = this.lastPorts;
    if (last && samePorts(last.ports, ports)) return last.shape;
    const shape = this.portsShape(ports);
    this.lastPorts = shape === undefined ? undefined : { ports, shape };
    return shape;
  }

  /** The previous pod's port list and its shape. */
  private lastPorts: { readonly ports: readonly ContainerPort[]; readonly shape: number } | undefined;

  private portsShape(ports: readonly ContainerPort[]): number | undefined {
    // Every port plain first: a list equal to a known one but for an extra field is not that shape.
    for (const port of ports) if (!plainPort(port)) return undefined;
    let key = 'p';
    for (const port of ports) key += `${port.name ?? ''}\u0000${port.port}\u0000${port.protocol}\u0000`;
    const known = this.shapes.get(key);
    if (known !== undefined) return known;
    const ids: number[] = [];
    for (const port of ports)
      ids.push(
        port.name === undefined ? NONE : this.string(port.name),
        port.port,
        this.string(port.protocol),
      );
    return this.shape(key, PORTS, ids);
  }

  /**
   * A new shape, numbered in the order first written: a marker (its number, negated, below NONE),
   * its kind, its length and its ids, written before the fields of the pod that first uses it.
   */
  private shape(key: string, kind: number, ids: readonly number[]): number {
    const index = this.shapes.size;
    this.shapes.set(key, index);
    this.push(-2 - index);
    this.push(kind);
    this.push(ids.length);
    for (const id of ids) this.push(id);
    return index;
  }
}

/** The decoded pods again, as the main thread's decoding would have made them, in order. */
export function readCompactPods(compact: CompactPods): IdentifiedObject[] {
  const { fields, strings } = compact;
  const result: IdentifiedObject[] = [];
  const shapes: (Labels | readonly ContainerPort[])[] = [];
  let at = 0;
  const str = (index: number): string => strings[index] as string;
  // A shape is written where it is first used: read it then, keep it for the pods that follow.
  for (let n = 0; n < compact.count; n++) {
    // The shapes this pod is the first to use come before its fields.
    while ((fields[at] as number) < NONE) {
      const index = -2 - (fields[at++] as number);
      const kind = fields[at++] as number;
      const length = fields[at++] as number;
      const ids = fields.subarray(at, at + length);
      at += length;
      shapes[index] = kind === LABELS ? makeLabels(ids) : makePorts(ids);
    }
    const namespace = str(fields[at++] as number);
    const name = str(fields[at++] as number);
    const identityIndex = fields[at++] as number;
    const identity = identityIndex === NONE ? `Pod ${namespace}/${name}` : str(identityIndex);
    const labels = shapes[fields[at++] as number] as Labels;
    const ipCount = fields[at++] as number;
    const ips: IpAddress[] = [];
    for (let i = 0; i < ipCount; i++) {
      const family = fields[at++] as number;
      const value = fields[at++] as number;
      ips.push(family === 4 ? { family: 4, value: BigInt(value >>> 0) } : parsedIp(str(value)));
    }
    const ports = shapes[fields[at++] as number] as readonly ContainerPort[];
    const hostNetwork = fields[at++] === 1;
    const nodeIndex = fields[at++] as number;
    const accountIndex = fields[at++] as number;
    const location = {
      file: str(fields[at++] as number),
      line: fields[at++] as number,
      column: fields[at++] as number,
    };
    const hostIpCount = fields[at++] as number;
    const hostIps: string[] = [];
    for (let i = 0; i < hostIpCount; i++) hostIps.push(str(fields[at++] as number));
    const ownerKind = fields[at++] as number;
    const ownerName = fields[at++] as number;
    // decodePod's fields in its order: the node and service account, when there are, go before the location.
    const endpoint: { -readonly [K in keyof Omit<Endpoint, 'id'>]: Omit<Endpoint, 'id'>[K] } = {
      kind: 'Pod',
      namespace,
      name,
      labels,
      ips: exactArray(ips),
      ports,
      hostNetwork,
    };
    if (nodeIndex !== NONE) endpoint.node = str(nodeIndex);
    if (accountIndex !== NONE) endpoint.serviceAccount = str(accountIndex);
    endpoint.location = location;
    const object: DecodedObject =
      ownerKind === NONE
        ? { kind: 'Endpoint', endpoint, hostIps }
        : { kind: 'Endpoint', endpoint, hostIps, owner: { kind: str(ownerKind), name: str(ownerName) } };
    result.push({ identity, object });
  }
  return result;

  function makeLabels(ids: Int32Array): Labels {
    const labels: Record<string, string> = {};
    for (let i = 0; i < ids.length; i += 2) labels[str(ids[i] as number)] = str(ids[i + 1] as number);
    return labels;
  }

  function makePorts(ids: Int32Array): readonly ContainerPort[] {
    const ports: ContainerPort[] = [];
    for (let i = 0; i < ids.length; i += 3) {
      const nameIndex = ids[i] as number;
      const port = ids[i + 1] as number;
      const protocol = str(ids[i + 2] as number) as Protocol;
      ports.push(nameIndex === NONE ? { port, protocol } : { name: str(nameIndex), port, protocol });
    }
    return exactArray(ports);
  }
}

/** Equal port lists of plain ports (the fields a carried port has: name when named, port, protocol). */
function samePorts(known: readonly ContainerPort[], ports: readonly ContainerPort[]): boolean {
  if (known === ports) return true;
  if (known.length !== ports.length) return false;
  for (let i = 0; i < ports.length; i++) {
    const a = known[i] as ContainerPort;
    const b = ports[i] as ContainerPort;
    if (a.name !== b.name || a.port !== b.port || a.protocol !== b.protocol || !plainPort(b)) return false;
  }
  return true;
}

const NAMED_PORT_FIELDS = ['name', 'port', 'protocol'];
const UNNAMED_PORT_FIELDS = ['port', 'protocol'];

/** A port of exactly the fields this form carries, in decodeContainerPorts' order. */
function plainPort(port: ContainerPort): boolean {
  return keysAre(port, port.name === undefined ? UNNAMED_PORT_FIELDS : NAMED_PORT_FIELDS);
}

/** A location of exactly the three fields this form carries (as files' locators make them). */
const LOCATION_FIELDS = ['file', 'line', 'column'];

function parsedIp(text: string): IpAddress {
  const parsed = parseIp(text);
  if (!parsed.ok) throw new Error(`unreachable: the worker sent an invalid address ${text}`);
  return parsed.value;
}
