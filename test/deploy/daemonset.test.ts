/**
 * The agent DaemonSet's container run as a kubelet would run it (root): its args and environment
 * from deploy/direct (NODE_NAME as the downward API fills it from spec.nodeName), exactly its
 * capabilities (setpriv: bounding, inheritable and ambient sets of the manifest's `add`, the uid of
 * its securityContext), in a network namespace standing for the node (hostNetwork), with the
 * pod's service account where the official client looks for it — token, CA and namespace under
 * /var/run/secrets/kubernetes.io/serviceaccount in a mount namespace of its own, and
 * KUBERNETES_SERVICE_HOST/PORT — against the fake API server over TLS with that token. The
 * readiness probe is asked on the manifest's port from outside the namespace, as a kubelet asks
 * it over the node's address; the node's table must be a fresh render of the API's objects,
 * before and after a policy is added through the API.
 *
 * Not covered here: the container image itself (README, "The image"), and connections between
 * pods (the lab's tests probe those for the same agent and table).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/dataplane/index.ts';
import { parseCidr } from '../../src/net/ip.ts';
import { FakeApiServer } from '../fake-apiserver/server.ts';
import { needsRoot } from '../helpers/kernel.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import type { Raw } from '../helpers/builders.ts';
import { until } from '../agent/fault-world.ts';
import { distanceFromFresh, nodeWithPodCidrs, policy, smallCluster } from '../agent/helpers.ts';
import { render, type Json } from './kustomize.ts';

const OPENSSL = ['/usr/bin/openssl', '/bin/openssl'].find((p) => existsSync(p));
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
const skip =
  needsRoot('running the DaemonSet as a kubelet would') ||
  (!OPENSSL || !SETPRIV ? 'skipped: the DaemonSet test needs openssl and setpriv' : false);

const HOST_IP = '169.254.77.1';
const NODE_IP = '169.254.77.2';
const POD_CIDR = '10.1.0.0/24';
const TOKEN = 'daemonset-test-token';

/** The agent container of the direct install's DaemonSet. */
function agentContainer(): { args: string[]; env: Json[]; caps: string[]; uid: number } {
  const daemonSet = render('direct').find((o) => o.kind === 'DaemonSet')!;
  const pod = ((daemonSet.spec as Json).template as { spec: Json }).spec;
  const container = (pod.containers as Json[])[0]!;
  const security = container.securityContext as { runAsUser: number; capabilities: { add: string[] } };
  return {
    args: container.args as string[],
    env: container.env as Json[],
    caps: security.capabilities.add,
    uid: security.runAsUser,
  };
}

describe('the agent DaemonSet, run as a kubelet would', { skip }, () => {
  const cleanups: (() => Promise<unknown> | void)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  });

  it('becomes ready with its own capabilities and service account, and enforces what the API says', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-daemonset-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // The API server's certificate, for the address the node reaches it at; it is the CA too.
    execFileSync(OPENSSL!, [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'ca.crt'),
      '-subj', `/CN=${HOST_IP}`, '-addext', `subjectAltName=IP:${HOST_IP}`,
    ], { stdio: 'ignore' }); // prettier-ignore
    const server = new FakeApiServer({
      token: TOKEN,
      tls: {
        key: readFileSync(join(dir, 'key.pem'), 'utf8'),
        cert: readFileSync(join(dir, 'ca.crt'), 'utf8'),
      },
    });
    let objects: Raw[] = [
      nodeWithPodCidrs('n1', [POD_CIDR]),
      nodeWithPodCidrs('n2', ['10.2.0.0/24']),
      ...smallCluster(),
    ];
    for (const object of objects) server.store.apply(object);

    // The node: a network namespace reached over a veth, as the kubelet reaches the node's address.
    const ns = `pal-ds-${process.pid}`;
    const hostLink = `pds${process.pid % 100000}`;
    await run('ip', ['netns', 'add', ns]);
    cleanups.push(() => run('ip', ['netns', 'delete', ns]));
    await run('ip', ['link', 'add', hostLink, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    cleanups.push(() => run('ip', ['link', 'delete', hostLink]).catch(() => undefined));
    await run('ip', ['addr', 'add', `${HOST_IP}/30`, 'dev', hostLink]);
    await run('ip', ['link', 'set', hostLink, 'up']);
    for (const command of [
      ['addr', 'add', `${NODE_IP}/30`, 'dev', 'eth0'],
      ['link', 'set', 'eth0', 'up'],
      ['link', 'set', 'lo', 'up'],
    ])
      await run('ip', ['-n', ns, ...command]);
    const url = await server.start(0, HOST_IP);
    cleanups.push(() => server.stop());
    const port = new URL(url).port;

    // The service account as the kubelet projects it.
    const account = join(dir, 'serviceaccount');
    execFileSync('mkdir', ['-p', account]);
    writeFileSync(join(account, 'token'), TOKEN);
    writeFileSync(join(account, 'namespace'), 'palisade-system');
    writeFileSync(join(account, 'ca.crt'), readFileSync(join(dir, 'ca.crt')));

    const container = agentContainer();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      KUBERNETES_SERVICE_HOST: HOST_IP,
      KUBERNETES_SERVICE_PORT: port,
    };
    for (const variable of container.env) {
      const from = (variable.valueFrom as { fieldRef?: { fieldPath: string } } | undefined)?.fieldRef
        ?.fieldPath;
      assert.ok(from === 'spec.nodeName' || variable.value !== undefined, `env ${String(variable.name)}`);
      env[String(variable.name)] = from === 'spec.nodeName' ? 'n1' : String(variable.value);
    }
    const caps = container.caps.map((c) => `+${c.toLowerCase()}`).join(',');
    // `ip netns exec` gives the process a mount namespace of its own: a tmpfs on /run there holds
    // the service account (/var/run is /run) and stands for the hostPath /run/palisade.
    const script = [
      'set -e',
      'mount -t tmpfs tmpfs /run',
      'mkdir -p /run/secrets/kubernetes.io/serviceaccount /run/palisade',
      `cp ${account}/token ${account}/ca.crt ${account}/namespace /run/secrets/kubernetes.io/serviceaccount/`,
      'exec "$@"',
    ].join('\n');
    const command = [
      SETPRIV!,
      `--reuid=${container.uid}`,
      `--inh-caps=-all,${caps}`,
      `--ambient-caps=-all,${caps}`,
      `--bounding-set=-all,${caps}`,
      '--',
      process.execPath,
      ...palisadeArgv(),
      ...container.args,
    ];
    let log = '';
    const agent: ChildProcess = spawn('ip', ['netns', 'exec', ns, 'sh', '-c', script, 'sh', ...command], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    agent.stdout!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    agent.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    cleanups.push(async () => {
      if (agent.exitCode !== null || agent.signalCode !== null) return;
      const exited = new Promise((resolve) => agent.once('exit', resolve));
      agent.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    });

    const listen = container.args[container.args.indexOf('--listen') + 1]!;
    const probePort = listen.split(':').at(-1)!;
    const readyz = async (): Promise<number | undefined> => {
      try {
        return (await fetch(`http://${NODE_IP}:${probePort}/readyz`, { signal: AbortSignal.timeout(1000) }))
          .status;
      } catch {
        return undefined;
      }
    };
    const cidr = parseCidr(POD_CIDR);
    assert.ok(cidr.ok);
    const enforcing = async (what: string): Promise<void> =>
      until(
        what,
        async () =>
          (await readyz()) === 200 && distanceFromFresh(ns, objects, 'n1', [cidr.value]) === 0
            ? true
            : `readyz ${String(await readyz())}; ${log.slice(-600)}`,
        30_000,
      );
    await enforcing('ready, and the table a fresh render of the API');
    assert.match(log, /pod CIDRs from Node n1: 10\.1\.0\.0\/24/);
    assert.match(
      log,
      /watching the Kubernetes API at https:\/\/169\.254\.77\.1:\d+ \(the service account in/,
    );
    // Exactly the manifest's capabilities, and its uid.
    const status = readFileSync(`/proc/${agent.pid}/status`, 'utf8');
    const effective = BigInt(`0x${/^CapEff:\s*([0-9a-f]+)/m.exec(status)![1]}`);
    assert.equal(effective, 1n << 12n, 'CapEff is CAP_NET_ADMIN alone'); // CAP_NET_ADMIN = 12
    assert.match(status, new RegExp(`^Uid:\\s+${container.uid}\\s`, 'm'));

    const added = policy('shop', 'web-from-db', { app: 'web' }, { app: 'db' }, 80);
    server.store.apply(added);
    objects = [...objects, added];
    await enforcing('the added policy enforced');
  });
});
