/**
 * Runner for the network-policy-api conformance suite transcribed as data
 * (../shared/conformance/anp-v1alpha1, see its README): the cluster model as real objects
 * (Namespaces, Nodes, Pods with their declared ports), each case's cumulative steps, and every
 * check evaluated on IPv4 (upstream probes status.podIP). A `rewrite` hook lets the same cases
 * run with the policies expressed another way (ClusterNetworkPolicy).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { compiledVerdicts } from '../../src/analysis/compiled-engine.ts';
import type { Cluster, Protocol } from '../../src/model/types.ts';
import type { IpAddress } from '../../src/net/ip.ts';
import { evaluate } from '../../src/semantics/evaluate.ts';
import { indexCluster } from '../../src/semantics/match.ts';
import { describeStep } from '../../src/semantics/tiers.ts';
import type { Verdict } from '../../src/semantics/types.ts';
import { targetNamed, verdictsFor } from './renderer-verdicts.ts';

type Raw = Record<string, unknown>;

interface ModelPort {
  name?: string;
  port: number;
  protocol: Protocol;
  declared: boolean;
}
interface ModelPod {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  hostNetwork: boolean;
  node: string;
  ip: string;
  ipv6: string;
  containers: { name: string; ports: ModelPort[] }[];
}
export interface Model {
  nodes: { name: string; labels: Record<string, string>; ip: string; ipv6: string }[];
  namespaces: { name: string; labels: Record<string, string> }[];
  pods: ModelPod[];
}
export interface Check {
  from: string;
  to: string;
  port: number;
  protocol: Protocol;
  expect: 'allow' | 'deny';
}
export interface Step {
  subtest: string;
  apply?: Raw[];
  delete?: string[];
  namespaceLabels?: Record<string, Record<string, string>>;
  podLabels?: Record<string, Record<string, string>>;
  checks?: Check[];
}
export interface ConformanceCase {
  readonly file: string;
  readonly name: string;
  readonly steps: readonly Step[];
}

export interface CheckResult {
  readonly case: string;
  readonly subtest: string;
  readonly check: Check;
  readonly allowed: boolean;
  /** The walk of both sides, for failure messages. */
  readonly why: string;
}

/** Rewrites a step's objects and delete references (identity by default). */
export interface Rewrite {
  objects(objects: readonly Raw[]): Raw[];
  deleteRef(ref: string): string;
}

export function readSuite(dir: string): { model: Model; cases: ConformanceCase[] } {
  const model = parse(readFileSync(join(dir, 'MODEL.yaml'), 'utf8')) as Model;
  const cases = readdirSync(dir)
    .filter((f) => /^\d{3}-.*\.yaml$/.test(f))
    .sort()
    .map((file) => {
      const data = parse(readFileSync(join(dir, file), 'utf8')) as { name: string; steps: Step[] };
      return { file, name: data.name, steps: data.steps };
    });
  return { model, cases };
}

/**
 * Who answers: the reference evaluator, the compiled classifier (tier tables + NetworkPolicy
 * maps), or a VPP stack's rendering read by its interpreter. The VPP stacks do not police traffic
 * between a pod and its own node, and VPPTCP no SCTP: such checks are left out for them.
 */
/** The reference evaluator, the compiled classifier, or a render target's interpreter (by target name). */
export type Engine = 'reference' | 'compiled' | (string & {});

/** The state after each step of a case: the policy objects in force, and namespace and pod labels. */
export interface CaseState {
  readonly step: Step;
  readonly policies: readonly Raw[];
  readonly namespaceLabels: ReadonlyMap<string, Record<string, string>>;
  readonly podLabels: ReadonlyMap<string, Record<string, string>>;
}

/** Applies a case's cumulative steps one by one (objects rewritten when asked). */
export function* walkSteps(model: Model, kase: ConformanceCase, rewrite?: Rewrite): Generator<CaseState> {
  const namespaceLabels = new Map(model.namespaces.map((n) => [n.name, n.labels]));
  const podLabels = new Map(model.pods.map((p) => [`${p.namespace}/${p.name}`, p.labels]));
  const policies = new Map<string, Raw>();
  for (const step of kase.steps) {
    for (const object of rewrite ? rewrite.objects(step.apply ?? []) : (step.apply ?? []))
      policies.set(identity(object), object);
    for (const ref of step.delete ?? []) {
      const key = rewrite ? rewrite.deleteRef(ref) : ref;
      if (!policies.delete(key)) throw new Error(`${kase.file}: delete of ${key}, which does not exist`);
    }
    for (const [name, labels] of Object.entries(step.namespaceLabels ?? {}))
      namespaceLabels.set(name, labels);
    for (const [name, labels] of Object.entries(step.podLabels ?? {})) podLabels.set(name, labels);
    yield { step, policies: [...policies.values()], namespaceLabels, podLabels };
  }
}

export function runCase(
  model: Model,
  kase: ConformanceCase,
  rewrite?: Rewrite,
  engine: Engine = 'reference',
): CheckResult[] {
  const results: CheckResult[] = [];
  for (const { step, policies, namespaceLabels, podLabels } of walkSteps(model, kase, rewrite)) {
    const cluster = clusterOf(modelObjects(model, namespaceLabels, podLabels, policies), kase.file);
    const index = indexCluster(cluster);
    const compiled = engine === 'compiled' ? compiledVerdicts(cluster, {}) : undefined;
    const target = engine === 'reference' || engine === 'compiled' ? undefined : targetNamed(engine);
    const rendered = target ? verdictsFor(target.name, cluster) : undefined;
    for (const check of step.checks ?? []) {
      // What the target does not police: traffic with a pod's own node, or by design (its reason).
      if (target && !target.capabilities.policesOwnNode && ownNodeTraffic(cluster, check)) continue;
      const verdict = evaluate(
        index,
        {
          src: { kind: 'endpoint', endpoint: endpointOf(cluster, check.from) },
          dst: { kind: 'endpoint', endpoint: endpointOf(cluster, check.to) },
          protocol: check.protocol,
          port: check.port,
          family: 4,
        },
        {},
      );
      const v4 = (id: string) => endpointOf(cluster, id).ips.filter((ip) => ip.family === 4);
      const packet = (): { src: IpAddress; dst: IpAddress; protocol: Protocol; port: number } => ({
        src: v4(check.from)[0] as IpAddress,
        dst: v4(check.to)[0] as IpAddress,
        protocol: check.protocol,
        port: check.port,
      });
      if (target?.interpreter?.unpoliced?.(packet())) continue;
      const allowed = compiled
        ? compiled(v4(check.from), v4(check.to), check.protocol, check.port) === true
        : rendered
          ? rendered(packet())
          : verdict.allowed;
      results.push({ case: kase.file, subtest: step.subtest, check, allowed, why: walkText(verdict) });
    }
  }
  return results;
}

/** A check between a pod and its own node (one end host-networked on the other's node). */
function ownNodeTraffic(cluster: Cluster, check: Check): boolean {
  const from = endpointOf(cluster, check.from);
  const to = endpointOf(cluster, check.to);
  return (from.hostNetwork || to.hostNetwork) && from.node !== undefined && from.node === to.node;
}

/** `Kind/namespace/name` or `Kind/name`, as the suite's delete entries are written. */
function identity(object: Raw): string {
  const metadata = object.metadata as { name: string; namespace?: string };
  return metadata.namespace
    ? `${String(object.kind)}/${metadata.namespace}/${metadata.name}`
    : `${String(object.kind)}/${metadata.name}`;
}

/**
 * The model as objects, with the given labels and policies. `servedPorts` also lists the ports a
 * container serves without declaring them, unnamed (what a lab must listen on; unnamed ports
 * change no named-port resolution).
 */
export function modelObjects(
  model: Model,
  namespaceLabels: ReadonlyMap<string, Record<string, string>>,
  podLabels: ReadonlyMap<string, Record<string, string>>,
  policies: readonly Raw[],
  options: { readonly servedPorts?: boolean } = {},
): Raw[] {
  const nodeIp = new Map(model.nodes.map((n) => [n.name, n.ip]));
  return [
    ...model.namespaces.map((n) => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: n.name, labels: namespaceLabels.get(n.name) ?? n.labels },
    })),
    ...model.nodes.map((n) => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: n.name, labels: n.labels },
      status: {
        addresses: [
          { type: 'InternalIP', address: n.ip },
          { type: 'InternalIP', address: n.ipv6 },
        ],
      },
    })),
    ...model.pods.map((p) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, namespace: p.namespace, labels: podLabels.get(`${p.namespace}/${p.name}`) },
      spec: {
        nodeName: p.node,
        hostNetwork: p.hostNetwork,
        // Declared ports are in the container spec (and usable as named ports).
        containers: p.containers.map((c) => ({
          name: c.name,
          ports: c.ports
            .filter((port) => port.declared || options.servedPorts)
            .map((port) => ({
              ...(port.name && port.declared ? { name: port.name } : {}),
              containerPort: port.port,
              protocol: port.protocol,
            })),
        })),
      },
      status: {
        phase: 'Running',
        podIP: p.ip,
        podIPs: [{ ip: p.ip }, { ip: p.ipv6 }],
        hostIP: nodeIp.get(p.node),
      },
    })),
    ...policies,
  ];
}

function clusterOf(objects: readonly Raw[], file: string): Cluster {
  const loaded = loadFromTexts(
    [{ name: file, text: objects.map((o) => JSON.stringify(o)).join('\n---\n') }],
    'v1',
  );
  const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length) throw new Error(`${file}: ${errors.map((e) => `${e.code} ${e.message}`).join('; ')}`);
  return loaded.cluster;
}

function endpointOf(cluster: Cluster, id: string) {
  const found = cluster.endpoints.find((e) => e.id === id);
  if (!found) throw new Error(`no pod ${id} in the model`);
  return found;
}

function walkText(verdict: Verdict): string {
  const side = (s: Verdict['egress']) =>
    `${s.direction}: ${s.walk.length ? s.walk.map(describeStep).join(' → ') : s.reason}`;
  return `${side(verdict.egress)}; ${side(verdict.ingress)}`;
}
