/**
 * The agent DaemonSet's container run as a kubelet would run it (root), one per node of a lab:
 * its args and environment from the install (NODE_NAME as the downward API fills it), exactly its
 * capabilities and uid (setpriv), in the lab node's network namespace (hostNetwork), with the
 * pod's service account where the official client looks for it, against the fake API server
 * over TLS with that token (kubelet.ts). The readiness probe is asked on the manifest's port over
 * the node's address, as a kubelet asks it. Then policy is applied through the API, and real
 * connections between the lab's pods must pass exactly where the reference evaluator allows —
 * for the nftables install (deploy/direct) and the eBPF one (deploy/overlays/direct-ebpf), each
 * under exactly its own capability set.
 *
 * Not covered here: the container image itself (docs/install.md, "The image").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadFromObjects } from '../../src/ingest/index.ts';
import type { DatapathKind } from '../../src/lab/index.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';
import { policy } from '../agent/helpers.ts';
import {
  NSENTER,
  OPENSSL,
  SETPRIV,
  UNSHARE,
  agentContainer,
  capabilityMask,
  runAsKubelet,
  ungrantable,
  type KubeletRun,
} from './kubelet.ts';
import {
  apiServerForLab,
  everyAgentReady,
  kernelMatchesReference,
  labObjects,
  withoutPolicy,
} from './lab-cluster.ts';

const skip =
  needsRoot('running the DaemonSet as a kubelet would') ||
  (!OPENSSL || !SETPRIV || !UNSHARE || !NSENTER
    ? 'skipped: the DaemonSet test needs openssl, setpriv, unshare and nsenter (util-linux)'
    : false);

/** This file's own link-local /24 for the nodes' links to the host (kubelet.ts). */
const SUBNET = 77;
const TOKEN = 'daemonset-test-token';

const INSTALLS: readonly { readonly install: string; readonly datapath: DatapathKind }[] = [
  { install: 'direct', datapath: 'nftables' },
  { install: 'overlays/direct-ebpf', datapath: 'ebpf' },
];

describe('the agent DaemonSet, run as a kubelet would on every node of a lab', { skip }, () => {
  for (const { install, datapath } of INSTALLS) {
    it(`deploy/${install}: ready under exactly its capabilities, and the pods' connections are what the API's policy says`, async (t) => {
      const cleanups: (() => Promise<unknown> | void)[] = [];
      try {
        await exercise(install, datapath, cleanups, (message) => t.diagnostic(message));
      } finally {
        for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
      }
    });
  }
});

async function exercise(
  install: string,
  datapath: DatapathKind,
  cleanups: (() => Promise<unknown> | void)[],
  note: (message: string) => void,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-daemonset-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  // The lab: pods in namespaces on two nodes, and no policy, so everything passes until the
  // agents enforce what the API says (the lab's own allow-all table goes when an nftables agent
  // adopts the table; an eBPF agent's programs decide before it).
  const base = labObjects();
  const lab = await startLab('pds', base, loadFromObjects(base).cluster);
  cleanups.push(() => lab.down());
  const plan = lab.lab.plan;
  const api = await apiServerForLab({ dir, plan, base, subnet: SUBNET, token: TOKEN }, cleanups);
  let objects = api.objects;

  const manifest = agentContainer(install);
  // This machine's own bounding set lacks SYS_RESOURCE (a container runtime's choice), so no
  // process here can hold it. The eBPF set asks for it only for map memory on kernels before
  // memcg accounting of BPF memory (5.11); run with the rest and say so — anything else missing
  // fails the test.
  const missing = ungrantable(manifest.caps);
  assert.ok(
    missing.every((cap) => cap === ('SYS_RESOURCE' as string)),
    `this host cannot grant ${missing.join(', ')}`,
  );
  if (missing.length > 0) note(`this host cannot grant ${missing.join(', ')}: run without it`);
  const container = { ...manifest, caps: manifest.caps.filter((cap) => !missing.includes(cap)) };
  const agents: KubeletRun[] = [];
  for (const node of plan.nodes) {
    const agent = runAsKubelet({
      container,
      podName: `palisade-agent-${node.name}`,
      nodeName: node.name,
      netns: node.netns,
      apiHost: api.links[node.index]!.host,
      apiPort: api.port,
      account: { token: TOKEN, ca: api.tls.cert },
      dir,
    });
    cleanups.push(agent.stop);
    agents.push(agent);
  }
  const logs = (): string =>
    agents.map((a, i) => `--- ${plan.nodes[i]!.name}\n${a.log().slice(-800)}`).join('\n');

  await everyAgentReady(api.links, container.args, logs);
  for (const [i, agent] of agents.entries()) {
    assert.match(agent.log(), new RegExp(`pod CIDRs from Node ${plan.nodes[i]!.name}: `));
    assert.match(
      agent.log(),
      /watching the Kubernetes API at https:\/\/169\.254\.77\.\d+:\d+ \(the service account in/,
    );
    // Exactly the manifest's capabilities, and its uid.
    const status = readFileSync(`/proc/${agent.child.pid}/status`, 'utf8');
    const effective = BigInt(`0x${/^CapEff:\s*([0-9a-f]+)/m.exec(status)![1]}`);
    assert.equal(effective, capabilityMask(container.caps), `CapEff is exactly ${container.caps.join(', ')}`);
    assert.match(status, new RegExp(`^Uid:\\s+${container.uid}\\s`, 'm'));
  }
  assert.equal(datapath === 'ebpf', container.bpffs, 'the eBPF install mounts the BPF filesystem');

  await kernelMatchesReference('no policy: every connection passes', lab.lab, objects, false, logs);

  // Policy through the API only: the agents alone can make the kernel deny.
  const added = [
    policy('shop', 'db-from-web', { app: 'db' }, { app: 'web' }, 5432),
    policy('shop', 'web-from-db', { app: 'web' }, { app: 'db' }, 80),
  ];
  for (const object of added) api.server.store.apply(object);
  objects = [...objects, ...added];
  await kernelMatchesReference(
    `${datapath}: the API's policies enforced, kernel = reference on every pair and port`,
    lab.lab,
    objects,
    true,
    logs,
  );

  // A removed policy opens again what only it closed.
  api.server.store.remove('NetworkPolicy', 'shop', 'web-from-db');
  objects = withoutPolicy(objects, 'web-from-db');
  await kernelMatchesReference(
    `${datapath}: a deleted policy no longer enforced`,
    lab.lab,
    objects,
    true,
    logs,
  );
}
