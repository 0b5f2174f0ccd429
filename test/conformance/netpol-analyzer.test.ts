/**
 * np-guard/netpol-analyzer's corpus (../shared/conformance/netpol-analyzer): every one of its 305
 * inputs is analysed or rejected with located diagnostics, never a crash; and where that tool's
 * expected connectivity exists and the semantics can agree, Palisade gives the same answer.
 *
 * The tool differs from Kubernetes in documented ways (see the corpus README): it never matches
 * ipBlocks against pod IPs and does not model hostNetwork. For the comparison Palisade's result
 * is computed under that model (endpoints without addresses, no host network) — so every
 * remaining difference would be a real disagreement.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import { INGRESS_CONTROLLER_LABEL, IngressController } from '../../src/analysis/ingress-controller.ts';
import { loadCluster } from '../../src/ingest/load.ts';
import type { Cluster, Endpoint } from '../../src/model/types.ts';
import { isAllPorts, isNoPorts, type PortSet } from '../../src/model/port-set.ts';
import type { LoadResult } from '../../src/ingest/types.ts';

const ROOT = join(import.meta.dirname, '../../../shared/conformance/netpol-analyzer');
const available = existsSync(join(ROOT, 'tests'));
const dirs = available ? readdirSync(join(ROOT, 'tests')).sort() : [];

/** Kinds the tool analyses that Palisade does not model (OpenShift/KubeVirt networking objects). */
const NOT_YET_MODELLED = /UserDefinedNetwork|NetworkAttachment|VirtualMachine/;

/** Inputs whose expected output differs for a documented reason. */
const EXPLAINED: Record<string, string> = {
  minikube_resources:
    'its Job pods are in phase Succeeded; Palisade leaves finished pods out, the tool keeps them',
};

/** Inputs the tool's authors marked bad, and what Palisade reports for them. */
const BAD_INPUTS: Record<string, string[]> = {
  bad_netpols: [
    'CIDR_INVALID',
    'LABEL_KEY_INVALID',
    'PEER_IPBLOCK_WITH_SELECTOR',
    'PEER_EMPTY',
    'LABEL_VALUE_INVALID',
  ],
  bad_yamls: ['SCHEMA_REQUIRED'],
  np_bad_path_test_1: ['OBJECT_DUPLICATE'],
  np_bad_path_test_2: ['END_PORT_WITHOUT_NUMERIC_PORT'],
  bad_path_namespace_with_same_name: ['OBJECT_DUPLICATE'],
  document_with_syntax_error: ['YAML_SYNTAX'],
};

const loaded = new Map<string, LoadResult>();
async function load(dir: string): Promise<LoadResult> {
  const cached = loaded.get(dir);
  if (cached) return cached;
  const result = await loadCluster([join(ROOT, 'tests', dir)]);
  loaded.set(dir, result);
  return result;
}

describe(
  'netpol-analyzer corpus',
  { skip: available ? false : 'corpus not found beside the project' },
  () => {
    it('analyses or rejects every input with located diagnostics', async () => {
      assert.equal(dirs.length, 305);
      for (const dir of dirs) {
        const { diagnostics } = await load(dir);
        for (const d of diagnostics) {
          assert.ok(d.file.length > 0, `${dir}: ${d.code} has no file`);
          if (d.code.startsWith('YAML_') || d.code.startsWith('SCHEMA_'))
            assert.ok(d.line >= 1, `${dir}: ${d.code} has no line`);
        }
      }
    });

    it('reports the problems of the inputs marked bad', async () => {
      for (const [dir, codes] of Object.entries(BAD_INPUTS)) {
        const found = new Set<string>((await load(dir)).diagnostics.map((d) => d.code));
        for (const code of codes)
          assert.ok(found.has(code), `${dir}: expected ${code}, got ${[...found].join(', ')}`);
      }
    });

    it('agrees with the expected connectivity wherever the semantics can agree', async (t) => {
      let compared = 0;
      const skipped: string[] = [];
      const withController: string[] = [];
      for (const dir of dirs) {
        const expectedFile = join(ROOT, 'expected', `${dir}_connlist_output.txt`);
        if (!existsSync(expectedFile)) continue;
        const result = await load(dir);
        const unsupported = result.diagnostics.some(
          (d) => d.code === 'KIND_SKIPPED' && NOT_YET_MODELLED.test(d.message),
        );
        if (unsupported || result.diagnostics.some((d) => d.severity === 'error') || dir in EXPLAINED) {
          skipped.push(dir);
          continue;
        }
        const expected = readFileSync(expectedFile, 'utf8')
          .split('\n')
          .filter((line) => line.includes(' => ') && !/\d+\.\d+\.\d+\.\d+/.test(line));
        assert.deepEqual(connections(result).sort(), expected.sort(), dir);
        compared++;
        if (expected.some((line) => line.startsWith(INGRESS_CONTROLLER_LABEL))) withController.push(dir);
      }
      t.diagnostic(
        `compared ${compared} inputs exactly (${withController.length} with the ingress controller: ${withController.join(', ')}); ${skipped.length} skipped (unsupported kinds, input errors or explained)`,
      );
      assert.ok(compared >= 30, `only ${compared} inputs compared`);
      // Every input with Ingress or Route objects whose expected answer the tool gives.
      assert.ok(
        withController.length >= 6,
        `only ${withController.length} inputs with the ingress controller`,
      );
    });
  },
);

/** Palisade's answers in the tool's model and output format: per owning workload, no self pairs. */
function connections(result: LoadResult): string[] {
  const theirModel: Cluster = {
    ...result.cluster,
    endpoints: result.cluster.endpoints.map((e) => ({ ...e, ips: [], hostNetwork: false })),
  };
  const owners = podOwners(result);
  const matrix = computeMatrix(theirModel, { queries: [] });
  const ids = matrix.endpoints.map((e) => ownerId(e, owners));
  const byPair = new Map<string, Set<string>>();
  ids.forEach((from, i) =>
    ids.forEach((to, j) => {
      if (from === to) return;
      const key = `${from} => ${to}`;
      const ports = matrix.ports(i, j);
      byPair.set(key, (byPair.get(key) ?? new Set()).add(isNoPorts(ports) ? '' : formatTheirs(ports)));
    }),
  );
  // The ingress controller, as the tool names it: what it may open to each workload's pods.
  if (theirModel.ingresses?.length) {
    const controller = new IngressController(theirModel);
    matrix.endpoints.forEach((endpoint, i) => {
      const ports = controller.ports(endpoint);
      const key = `${INGRESS_CONTROLLER_LABEL} => ${ids[i] as string}`;
      byPair.set(key, (byPair.get(key) ?? new Set()).add(isNoPorts(ports) ? '' : formatTheirs(ports)));
    });
  }
  const lines: string[] = [];
  for (const [pair, answers] of byPair) {
    assert.equal(answers.size, 1, `pods of one owner disagree for ${pair}`);
    const [answer] = answers;
    if (answer) lines.push(`${pair} : ${answer}`);
  }
  return lines;
}

function podOwners(result: LoadResult): Map<string, string> {
  const owners = new Map<string, string>();
  for (const raw of result.rawObjects) {
    const value = raw.value as {
      kind?: string;
      metadata?: { name?: string; namespace?: string; ownerReferences?: { kind?: string; name: string }[] };
    };
    if (value.kind !== 'Pod' || !value.metadata?.name) continue;
    const namespace = value.metadata.namespace ?? 'default';
    const owner = value.metadata.ownerReferences?.[0];
    owners.set(
      `${namespace}/${value.metadata.name}`,
      // The tool names an owner without a kind as a Pod.
      owner
        ? `${namespace}/${owner.name}[${owner.kind ?? 'Pod'}]`
        : `${namespace}/${value.metadata.name}[Pod]`,
    );
  }
  return owners;
}

function ownerId(endpoint: Endpoint, owners: Map<string, string>): string {
  if (endpoint.kind === 'Pod')
    return (
      owners.get(`${endpoint.namespace}/${endpoint.name}`) ?? `${endpoint.namespace}/${endpoint.name}[Pod]`
    );
  return `${endpoint.namespace}/${endpoint.name}[${endpoint.kind}]`;
}

function formatTheirs(ports: PortSet): string {
  if (isAllPorts(ports)) return 'All Connections';
  return (['SCTP', 'TCP', 'UDP'] as const)
    .filter((p) => ports.ranges[p].length > 0)
    .map((p) => `${p} ${ports.ranges[p].map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(',')}`)
    .join(',');
}
