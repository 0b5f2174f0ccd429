/**
 * Flow records as the agents of a lab of the running shop would report them: each node's
 * verdict events attributed by the agent's own code (`attributeEvent` over the cluster the node
 * realized, staged policies included), so their deciding rules and staged parts are the real
 * ones — and a serve of a copy of the same manifests, with the records in a flow file beside
 * them, removed after the test.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attributeEvent, attributionContext, type FlowRecord } from '../../src/flows/index.ts';
import { loadCluster } from '../../src/ingest/index.ts';
import type { RunningServer } from '../../src/serve/index.ts';
import { serveIn } from './helpers.ts';

/** The lab's input (docs/commands/flows.md's `lab up --control-plane --flow-log`), the staged candidates with it. */
export const SHOP_RUNNING = [
  'examples/shop-running',
  'examples/shop/namespaces.yaml',
  'examples/shop/policies-shop.yaml',
  'examples/shop/policies-payments.yaml',
  'examples/staged/monitoring.yaml',
];

const IP = {
  frontend: '10.244.1.10',
  api: '10.244.1.11',
  gateway: '10.244.1.12',
  db: '10.244.2.11',
  prometheus: '10.244.2.12',
  frontendQ: '10.244.2.10',
};

/**
 * Connections and what the kernel did with them, on the node that judged each side: the
 * source's node judges its egress, the destination's its ingress.
 */
const CONNECTIONS: readonly {
  src: string;
  dst: string;
  port: number;
  node: string;
  verdict: 'allowed' | 'denied';
  deniedBy?: 'egress' | 'ingress';
  times: number;
}[] = [
  { src: IP.api, dst: IP.db, port: 5432, node: 'node-1', verdict: 'allowed', times: 40 },
  { src: IP.api, dst: IP.db, port: 5432, node: 'node-2', verdict: 'allowed', times: 40 },
  { src: IP.frontend, dst: IP.api, port: 8000, node: 'node-1', verdict: 'allowed', times: 25 },
  {
    src: IP.frontend,
    dst: IP.db,
    port: 5432,
    node: 'node-1',
    verdict: 'denied',
    deniedBy: 'egress',
    times: 3,
  },
  {
    src: IP.prometheus,
    dst: IP.db,
    port: 5432,
    node: 'node-2',
    verdict: 'denied',
    deniedBy: 'ingress',
    times: 2,
  },
  { src: IP.prometheus, dst: IP.frontendQ, port: 8080, node: 'node-2', verdict: 'allowed', times: 1 },
  {
    src: IP.gateway,
    dst: IP.db,
    port: 5432,
    node: 'node-1',
    verdict: 'denied',
    deniedBy: 'egress',
    times: 2,
  },
];

/** The records the nodes' agents write for CONNECTIONS, aggregated as one line per connection. */
export async function shopFlowRecords(): Promise<FlowRecord[]> {
  const { cluster } = await loadCluster(SHOP_RUNNING, { semantics: 'v1' });
  const contexts = new Map(['node-1', 'node-2'].map((node) => [node, attributionContext(cluster, node)]));
  return CONNECTIONS.map((c) => {
    const record = attributeEvent(contexts.get(c.node)!, {
      at: Date.parse('2026-11-29T08:00:00Z'),
      protocol: 'TCP',
      src: c.src,
      dst: c.dst,
      srcPort: 40000,
      port: c.port,
      verdict: c.verdict,
      ...(c.deniedBy ? { deniedBy: c.deniedBy } : {}),
      weight: c.times,
    });
    assert.equal(
      record.mismatch,
      undefined,
      `the fixture's kernel verdict is the evaluator's: ${record.mismatch}`,
    );
    const { sampled: _sampled, ...unsampled } = record;
    return unsampled;
  });
}

export const ndjson = (records: readonly unknown[]): string =>
  records.map((r) => `${JSON.stringify(r)}\n`).join('');

export interface FlowServe {
  readonly server: RunningServer;
  readonly dir: string;
  /** The flow file serve follows. */
  readonly flowFile: string;
  close(): Promise<void>;
}

/** Serves a copy of the shop's running manifests with `flows` in a flow file beside them. */
export async function serveShopFlows(flows: string): Promise<FlowServe> {
  const root = mkdtempSync(join(tmpdir(), `palisade-serve-flows-${process.pid}-`));
  const dir = join(root, 'input');
  for (const path of SHOP_RUNNING) cpSync(path, join(dir, path.replace(/\//g, '_')), { recursive: true });
  const flowFile = join(root, 'flows.ndjson');
  writeFileSync(flowFile, flows);
  const { server, close } = await serveIn(root, {
    read: () => loadCluster([dir], { semantics: 'v1' }),
    watch: [dir],
    flows: { kind: 'file', path: flowFile },
  });
  return { server, dir, flowFile, close };
}
