/**
 * The lab's etcd, authenticated and least-privileged as a cluster's should be: it serves TLS on
 * loopback and on a unix socket in the lab's directory (the agents, in other network namespaces,
 * reach it there), wants a client certificate signed by the lab's own CA (`pki/`, made at `up`;
 * the CA's key is deleted once every certificate is issued), and enforces etcd's RBAC with
 * Palisade's roles (src/agent/etcd-roles.ts): the lab writes as `palisade-reflector`, reads as
 * `palisade-reader`, each node's agent is `palisade-agent-<node>`. A client without a
 * certificate is refused at the handshake; an agent's identity cannot write policy.
 *
 * Writes go through the reflector (`reflect -f FILE --once`, the same writer, codec and layout)
 * with a deadline: a leader that does not step down, or an etcd that does not answer, ends the
 * write with one line naming what was waited for — never a hang.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentUser, palisadeAuthPlan, READER_USER, REFLECTOR_USER } from '../agent/index.ts';
import {
  connectEtcd,
  enableEtcdAuth,
  ensureReachable,
  EtcdAccessError,
  issueCertificates,
  pkiFiles,
  ROOT_USER,
  startEtcd,
  type StartEtcdOptions,
} from '../etcd/index.ts';
import type { EtcdConnection, EtcdStore } from '../etcd/types.ts';
import type { Diagnostic } from '../model/types.ts';
import { Reflector, ReflectorTimeoutError } from '../reflector/index.ts';
import { DEFAULT_ROOT, KeyLayout } from '../reflected/index.ts';
import type { ControlPlaneRecord } from './control-plane-record.ts';
import { LabError } from './topology.ts';

/** How long the lab's own etcd requests may take (the agents keep etcd's client default). */
const LAB_REQUEST_TIMEOUT_MS = 10_000;

/**
 * Starts etcd for the lab: data under `dir`/etcd, a unix socket beside it, certificates for
 * `root`, the reflector, the reader and each node's agent under `dir`/pki, Palisade's roles, auth
 * enabled; outlives this process.
 */
export async function startLabEtcd(
  dir: string,
  name: string,
  nodes: readonly string[],
  prefix = DEFAULT_ROOT,
): Promise<ControlPlaneRecord['etcd']> {
  const pki = join(dir, 'pki');
  issueCertificates(pki, [ROOT_USER, REFLECTOR_USER, READER_USER, ...nodes.map(agentUser)]);
  // etcd wants a unix URL in host:port form and names the file after both.
  const socket = join(dir, 'etcd.sock:0');
  const server = await startEtcd(labEtcdOptions(dir, name, socket, pki));
  const record = { pid: server.pid, endpoint: server.endpoint, socket, dataDir: server.dataDir, pki };
  try {
    await enableEtcdAuth(
      labEtcdConnection(record, ROOT_USER),
      palisadeAuthPlan(new KeyLayout(prefix), nodes),
    );
  } catch (error) {
    await server.stop();
    throw new LabError(`could not set up etcd's roles: ${(error as Error).message.split('\n')[0]}`);
  }
  return record;
}

/**
 * Starts the lab's etcd again on its data (after it died): the same port, unix socket (a stale
 * one is removed) and certificates; its users and roles are in its data. Returns the new record.
 */
export async function restartLabEtcd(
  dir: string,
  name: string,
  etcd: ControlPlaneRecord['etcd'],
): Promise<ControlPlaneRecord['etcd']> {
  const server = await startEtcd({
    ...labEtcdOptions(dir, name, etcd.socket, etcd.pki),
    port: Number(new URL(etcd.endpoint).port),
  });
  return { ...etcd, pid: server.pid };
}

function labEtcdOptions(
  dir: string,
  name: string,
  socket: string,
  pki: string | undefined,
): StartEtcdOptions {
  const files = pki !== undefined ? pkiFiles(pki) : undefined;
  return {
    dataDir: join(dir, 'etcd'),
    unixSocket: socket,
    detachedLog: join(dir, 'etcd.log'),
    name: `lab-${name}`,
    ...(files ? { tls: { caFile: files.caFile, ...files.server } } : {}),
  };
}

/**
 * How a process of the lab's reaches its etcd as `identity`: loopback, or (`socket`) the unix
 * socket the agents use. A lab recorded without certificates (made before they existed) is
 * plain.
 */
export function labEtcdConnection(
  record: ControlPlaneRecord['etcd'],
  identity: string,
  via: 'loopback' | 'socket' = 'loopback',
): EtcdConnection {
  if (record.pki === undefined)
    return { endpoints: [via === 'socket' ? `unix://${record.socket}` : record.endpoint] };
  const files = pkiFiles(record.pki);
  return {
    endpoints: [via === 'socket' ? `unixs://${record.socket}` : record.endpoint],
    caFile: files.caFile,
    ...files.client(identity),
    requestTimeoutMs: LAB_REQUEST_TIMEOUT_MS,
  };
}

/** Connects to the lab's etcd as `identity` (by default the read-only one) and checks it answers. */
export async function connectLabEtcd(
  record: ControlPlaneRecord,
  identity: string = READER_USER,
): Promise<EtcdStore> {
  const connection = labEtcdConnection(record.etcd, identity);
  let store: EtcdStore | undefined;
  try {
    store = await connectEtcd(connection);
    await ensureReachable(store, connection.endpoints, new KeyLayout(record.prefix).leader);
    return store;
  } catch (error) {
    store?.close();
    if (error instanceof EtcdAccessError) throw new LabError(`the lab's etcd: ${error.message}`);
    throw error;
  }
}

/**
 * Writes `objects` into etcd as the reflector does from manifests (`reflect -f FILE --once`), as
 * `palisade-reflector`: the file is the whole truth, so keys of objects no longer in it are
 * deleted and unchanged ones are not written. Gives up after `timeoutMs` with a LabError naming
 * what it waited for (and how many keys etcd took before that, if any). Returns the keys written
 * and the diagnostics of objects left out.
 */
export async function reflectObjects(
  record: ControlPlaneRecord,
  dir: string,
  objects: readonly object[],
  timeoutMs: number,
): Promise<{ written: number; keys: number; diagnostics: Diagnostic[] }> {
  const file = join(dir, 'cluster.yaml');
  // JSON documents are YAML documents; the reflector reads the file like any manifest.
  writeFileSync(file, objects.map((o) => JSON.stringify(o)).join('\n---\n') + '\n', { mode: 0o600 });
  const diagnostics: Diagnostic[] = [];
  const store = await connectLabEtcd(record, REFLECTOR_USER);
  const reflector = new Reflector({
    store,
    layout: new KeyLayout(record.prefix),
    source: { type: 'files', paths: [file], watch: false },
    once: true,
    timeoutMs,
    id: `lab-${process.pid}`,
    log: () => undefined,
    onDiagnostics: (found) => diagnostics.push(...found),
  });
  try {
    const stats = await reflector.run();
    return { written: stats?.written ?? 0, keys: stats?.received ?? 0, diagnostics };
  } catch (error) {
    if (!(error instanceof ReflectorTimeoutError || error instanceof EtcdAccessError)) throw error;
    const taken = reflector.stats?.written ?? 0;
    throw new LabError(
      `${error.message}${taken > 0 ? `; etcd took ${taken} of the change's keys before that (apply again to finish)` : ''}`,
    );
  } finally {
    store.close();
  }
}
