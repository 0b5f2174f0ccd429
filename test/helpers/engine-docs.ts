/**
 * Helpers for the tests that hold Palisade to Calico's and Cilium's documented examples: a
 * cluster from YAML text (as a user would write it), and one assertion per documented outcome
 * that checks the explained verdict, the verdict alone and the port set agree — each with the
 * sentence of the documentation it follows from, so a failure says which promise broke.
 */
import assert from 'node:assert/strict';
import { loadFromTexts } from '../../src/ingest/load.ts';
import type { Cluster, Diagnostic, Protocol } from '../../src/model/types.ts';
import { allowedPorts, evaluate, indexCluster, isAllowed, portSetHas } from '../../src/semantics/index.ts';
import type { Connection, Verdict } from '../../src/semantics/types.ts';
import { explainEndpoints, type EndpointExplanation } from '../../src/analysis/explain.ts';
import { addr } from './builders.ts';

/** Documents joined by `---`; throws on any error diagnostic (a doc example must load). */
export function yamlCluster(...documents: string[]): {
  cluster: Cluster;
  diagnostics: readonly Diagnostic[];
} {
  const result = loadFromTexts([{ name: 'docs.yaml', text: documents.join('\n---\n') }]);
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length)
    throw new Error(
      `example has errors: ${errors.map((e) => `${e.line}:${e.column} ${e.code} ${e.message}`).join('; ')}`,
    );
  return { cluster: result.cluster, diagnostics: result.diagnostics };
}

/**
 * Asserts that `from` may (or may not) connect to `to` on the port, by all three of the
 * evaluator's answers; returns the explained verdict for further checks.
 */
export function expectConnection(
  cluster: Cluster,
  from: string,
  to: string,
  port: number,
  expected: 'allowed' | 'denied',
  sentence: string,
  protocol: Protocol = 'TCP',
): Verdict {
  const index = indexCluster(cluster);
  const connection: Connection = { src: addr(cluster, from), dst: addr(cluster, to), protocol, port };
  const verdict = evaluate(index, connection);
  const want = expected === 'allowed';
  const what = `${from} → ${to} ${protocol}/${port} should be ${expected}, as the docs say: "${sentence}"`;
  assert.equal(
    verdict.allowed,
    want,
    `${what}\n  egress: ${verdict.egress.reason}\n  ingress: ${verdict.ingress.reason}`,
  );
  assert.equal(isAllowed(index, connection), want, `${what} (isAllowed)`);
  const ports = allowedPorts(index, connection.src, connection.dst);
  assert.equal(portSetHas(ports, protocol, port), want, `${what} (allowedPorts)`);
  return verdict;
}

/** A pod manifest line for the examples: namespace, name, labels, address, service account. */
export function podYaml(
  ns: string,
  name: string,
  labels: Record<string, string>,
  ip: string,
  extra: { serviceAccount?: string; node?: string; hostIp?: string; ports?: string } = {},
): string {
  const labelText = Object.entries(labels)
    .map(([k, v]) => `${k}: "${v}"`)
    .join(', ');
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}, labels: {${labelText}}}
spec:
  containers: [{name: c${extra.ports ? `, ports: ${extra.ports}` : ''}}]
${extra.serviceAccount ? `  serviceAccountName: ${extra.serviceAccount}\n` : ''}${extra.node ? `  nodeName: ${extra.node}\n` : ''}status: {podIP: ${ip}${extra.hostIp ? `, hostIP: ${extra.hostIp}` : ''}}`;
}

export function namespaceYaml(name: string, labels: Record<string, string> = {}): string {
  const labelText = Object.entries(labels)
    .map(([k, v]) => `${k}: "${v}"`)
    .join(', ');
  return `apiVersion: v1
kind: Namespace
metadata: {name: ${name}, labels: {${labelText}}}`;
}

/** `explain`'s answer for one endpoint of the cluster (by id). */
export function explainOne(cluster: Cluster, id: string): EndpointExplanation {
  const [explained] = explainEndpoints(
    cluster,
    cluster.endpoints.filter((e) => e.id === id),
  );
  assert.ok(explained, `${id} is an endpoint of the cluster`);
  return explained;
}
