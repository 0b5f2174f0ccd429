/**
 * The reflected install (deploy/reflected) run as kubelets would run it (root): the reflector
 * Deployment's two replicas (uid 65534, every capability dropped, the etcd Secret mounted 0440
 * for its fsGroup, POD_NAME and the ConfigMap's endpoints in its environment and `$(…)` in its
 * args) and the agent DaemonSet patched onto etcd (one per lab node, the agents' one shared
 * Secret), against a real etcd with TLS, client certificates and Palisade's roles for a shared
 * agent identity (sharedAgentAuthPlan), and the fake API server over TLS. Policy applied through
 * the API reaches the kernel only through reflector → etcd → agent: real connections between the
 * lab's pods pass exactly where the reference evaluator allows — also after the leading
 * reflector is stopped and its standby takes over.
 *
 * Not emulated: readOnlyRootFilesystem and the seccomp profile (runtime features, not the
 * program's), and the etcd StatefulSet (deploy/reflected-etcd) — the test's etcd is Debian's
 * etcd started directly, with the same TLS and roles.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  palisadeAuthPlan,
  REFLECTOR_USER,
  READER_USER,
  SHARED_AGENT_USER,
  sharedAgentAuthPlan,
} from '../../src/agent/index.ts';
import {
  enableEtcdAuth,
  etcdctlCommands,
  issueCertificates,
  ROOT_USER,
  startEtcd,
} from '../../src/etcd/index.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import { DEFAULT_ROOT, KeyLayout } from '../../src/reflected/index.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';
import { cli } from '../helpers/cli.ts';
import { needsEtcd } from '../live/etcd-fixture.ts';
import { until } from '../agent/fault-world.ts';
import { policy } from '../agent/helpers.ts';
import {
  NSENTER,
  OPENSSL,
  SETPRIV,
  UNSHARE,
  podContainer,
  runAsKubelet,
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
  needsRoot('running the reflected install as kubelets would') ||
  needsEtcd ||
  (!OPENSSL || !SETPRIV || !UNSHARE || !NSENTER
    ? 'skipped: the reflected install test needs openssl, setpriv, unshare and nsenter (util-linux)'
    : false);

/** This file's own link-local /24 for the nodes' links to the host (kubelet.ts). */
const SUBNET = 78;
const TOKEN = 'reflected-test-token';

describe("docs/install.md's etcd commands for a DaemonSet's shared agent identity", () => {
  it('are the shared plan less the per-node one', () => {
    const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'install.md'), 'utf8');
    const block =
      /<!-- etcd-roles-shared: checked by test\/deploy\/reflected\.etcd\.root\.test\.ts -->\s*```sh\n([\s\S]*?)```/.exec(
        page,
      )?.[1];
    assert.ok(block, 'docs/install.md has the etcd-roles-shared block');
    const layout = new KeyLayout(DEFAULT_ROOT);
    const common = new Set(etcdctlCommands(palisadeAuthPlan(layout, [])));
    const shared = etcdctlCommands(sharedAgentAuthPlan(layout)).filter((line) => !common.has(line));
    assert.deepEqual(block.trim().split('\n'), shared);
  });
});

describe(
  'the reflected install, run as kubelets would: reflectors, etcd with TLS and roles, agents',
  { skip },
  () => {
    it('enforces what the API says through reflector → etcd → agent, and on after the leading reflector stops', async () => {
      const cleanups: (() => Promise<unknown> | void)[] = [];
      try {
        await exercise(cleanups);
      } finally {
        for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
      }
    });
  },
);

async function exercise(cleanups: (() => Promise<unknown> | void)[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-reflected-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  // The reflector runs as uid 65534: it must reach etcd's socket (the stand-in for the cluster's
  // network) through this directory.
  chmodSync(dir, 0o711);

  // etcd: TLS, client certificates, Palisade's roles with the agents' shared identity.
  const pki = issueCertificates(join(dir, 'pki'), [
    ROOT_USER,
    REFLECTOR_USER,
    SHARED_AGENT_USER,
    READER_USER,
  ]);
  const socketDir = join(dir, 'etcd-socket');
  mkdirSync(socketDir, { mode: 0o711 });
  const etcd = await startEtcd({
    dataDir: join(dir, 'etcd'),
    unixSocket: join(socketDir, 'etcd.sock:0'),
    tls: { caFile: pki.caFile, ...pki.server },
  });
  cleanups.push(() => etcd.stop());
  chmodSync(join(socketDir, 'etcd.sock:0'), 0o666);
  const layout = new KeyLayout(DEFAULT_ROOT);
  await enableEtcdAuth(
    { endpoints: [etcd.endpoint], caFile: pki.caFile, ...pki.client(ROOT_USER) },
    sharedAgentAuthPlan(layout),
  );
  const endpoints = `unixs://${join(socketDir, 'etcd.sock:0')}`;
  const secret = (user: string): Record<string, string> => ({
    'ca.crt': readFileSync(pki.caFile, 'utf8'),
    'tls.crt': readFileSync(pki.client(user).certFile, 'utf8'),
    'tls.key': readFileSync(pki.client(user).keyFile, 'utf8'),
  });
  const configMaps = { 'palisade-etcd': { endpoints } };
  const secrets = {
    'palisade-etcd-reflector': secret(REFLECTOR_USER),
    'palisade-etcd-agent': secret(SHARED_AGENT_USER),
  };

  // The lab: pods on two nodes and no policy; the agents enforce what etcd comes to hold.
  const base = labObjects();
  const lab = await startLab('prf', base, loadFromObjects(base).cluster);
  cleanups.push(() => lab.down());
  const plan = lab.lab.plan;
  const api = await apiServerForLab(
    { dir, plan, base, subnet: SUBNET, token: TOKEN, alsoAt: ['127.0.0.1'] },
    cleanups,
  );
  let objects = api.objects;
  const account = { token: TOKEN, ca: api.tls.cert };

  const reflectorContainer = podContainer('reflected', 'Deployment');
  assert.equal(reflectorContainer.uid, 65534);
  assert.deepEqual(reflectorContainer.caps, []);
  const reflectors = new Map<string, KubeletRun>();
  for (const name of ['palisade-reflector-7d9f-a', 'palisade-reflector-7d9f-b']) {
    const run = runAsKubelet({
      container: reflectorContainer,
      podName: name,
      nodeName: plan.nodes[0]!.name,
      apiHost: '127.0.0.1',
      apiPort: api.port,
      account,
      configMaps,
      secrets,
      dir,
    });
    cleanups.push(run.stop);
    reflectors.set(name, run);
  }
  const agentContainer = podContainer('reflected', 'DaemonSet');
  const agents: KubeletRun[] = [];
  for (const node of plan.nodes) {
    const run = runAsKubelet({
      container: agentContainer,
      podName: `palisade-agent-${node.name}`,
      nodeName: node.name,
      netns: node.netns,
      apiHost: api.links[node.index]!.host,
      apiPort: api.port,
      account,
      configMaps,
      secrets,
      dir,
    });
    cleanups.push(run.stop);
    agents.push(run);
  }
  const logs = (): string =>
    [
      ...[...reflectors].map(([name, r]) => [name, r] as const),
      ...agents.map((a, i) => [plan.nodes[i]!.name, a] as const),
    ]
      .map(([name, r]) => `--- ${name}\n${r.log().slice(-700)}`)
      .join('\n');

  await everyAgentReady(api.links, agentContainer.args, logs);
  const leader = (): string | undefined =>
    [...reflectors].find(([name, r]) => r.log().includes(`leading as ${name}`))?.[0];
  await until('a reflector leads', () => leader() !== undefined || logs(), 30_000);

  await kernelMatchesReference('no policy: every connection passes', lab.lab, objects, false, logs);

  const added = [
    policy('shop', 'db-from-web', { app: 'db' }, { app: 'web' }, 5432),
    policy('shop', 'web-from-db', { app: 'web' }, { app: 'db' }, 80),
  ];
  for (const object of added) api.server.store.apply(object);
  objects = [...objects, ...added];
  await kernelMatchesReference(
    "the API's policies enforced through reflector → etcd → agents",
    lab.lab,
    objects,
    true,
    logs,
  );

  // The agents registered under the shared identity; the reader sees both — once both status
  // keys say the last revision (an agent writes its status at most once a second, so right after
  // the kernel matches one may still show the revision before: `status` then exits 1, "behind").
  let status: Awaited<ReturnType<typeof cli>> | undefined;
  await until(
    'palisade status (reader identity) sees both agents alive and none behind',
    async () => {
      status = await cli([
        'status',
        '--etcd',
        endpoints,
        '--etcd-cacert',
        pki.caFile,
        '--etcd-cert',
        pki.client(READER_USER).certFile,
        '--etcd-key',
        pki.client(READER_USER).keyFile,
      ]);
      return (
        (status.code === 0 && /; 2 alive, 0 dead, 0 behind/.test(status.stdout)) ||
        `exit ${status.code}: ${status.stdout}${status.stderr}`
      );
    },
    30_000,
  );
  assert.doesNotMatch(status?.stderr ?? '', /denied|permission/);

  // The leader stops (a rolling update, a drained node): the standby takes over the writing.
  const first = leader()!;
  await reflectors.get(first)!.stop();
  api.server.store.remove('NetworkPolicy', 'shop', 'web-from-db');
  objects = withoutPolicy(objects, 'web-from-db');
  await kernelMatchesReference(
    'after the leader stopped, its standby reflects a deleted policy',
    lab.lab,
    objects,
    true,
    logs,
  );
  const standby = [...reflectors.keys()].find((name) => name !== first)!;
  assert.match(reflectors.get(standby)!.log(), new RegExp(`leading as ${standby}`));
}
