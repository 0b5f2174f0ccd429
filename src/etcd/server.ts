/**
 * A real etcd (Debian's `etcd-server`) started on loopback for tests, benchmarks and the lab:
 * free ports, data in a temp dir, stopped by pid and the dir removed. Nothing is shared with
 * another instance, so parallel runs do not collide. With `tls`, clients must present a
 * certificate signed by its CA (`--client-cert-auth`; the CN is their etcd user once auth is
 * enabled, see rbac.ts) and its peer port speaks TLS too; health is then read on a plain
 * metrics port, which serves /health and /metrics only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  unlinkSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** Where Debian installs etcd; `PALISADE_ETCD` overrides. */
export function etcdBinary(
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const candidates = [env.PALISADE_ETCD, '/usr/bin/etcd', '/usr/local/bin/etcd'];
  return candidates.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
}

export interface EtcdServer {
  /** Client URL (`http://127.0.0.1:PORT`; `https://` with TLS). */
  readonly endpoint: string;
  /** The unix socket's client URL (`unix:///…/etcd.sock:0`; `unixs://` with TLS), when one was asked for. */
  readonly unixEndpoint?: string;
  readonly pid: number;
  readonly dataDir: string;
  /** Stops etcd (SIGTERM, then SIGKILL) and removes its data dir. */
  stop(): Promise<void>;
}

export interface StartEtcdOptions {
  readonly binary?: string;
  /** Keep the data here instead of a fresh temp dir (not removed by stop()). */
  readonly dataDir?: string;
  /** Most operations in one transaction (etcd's default is 128). */
  readonly maxTxnOps?: number;
  readonly name?: string;
  /** Client port (default: a free one); a restart on the same data keeps its clients' URL this way. */
  readonly port?: number;
  /**
   * Also serve clients on this unix socket (an absolute path ending in `:<port>`, as etcd's unix
   * URLs are host:port — `…/etcd.sock:0`): processes in other network namespaces (the lab's
   * agents) reach it where loopback is not theirs.
   */
  readonly unixSocket?: string;
  /** Outlive this process (the lab's control plane): etcd's output goes to this file. */
  readonly detachedLog?: string;
  /** Serve clients and peers over TLS with this certificate, and require client certificates signed by `caFile`. */
  readonly tls?: { readonly caFile: string; readonly certFile: string; readonly keyFile: string };
}

export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdServer> {
  const binary = options.binary ?? etcdBinary();
  if (!binary) throw new Error('etcd is not installed (apt-get install etcd-server)');
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), `palisade-etcd-${process.pid}-`));
  const [clientPort, peerPort] = [options.port ?? (await freePort()), await freePort()];
  const tls = options.tls;
  const [http, unix] = tls ? ['https', 'unixs'] : ['http', 'unix'];
  const endpoint = `${http}://127.0.0.1:${clientPort}`;
  const peer = `${http}://127.0.0.1:${peerPort}`;
  const health = tls ? `http://127.0.0.1:${await freePort()}` : endpoint;
  const name = options.name ?? `palisade-${process.pid}`;
  if (options.unixSocket) await removeStaleSocket(options.unixSocket);
  // etcd reads a unix URL's host as a path relative to its working directory.
  const listen = options.unixSocket ? `${endpoint},${unix}://${basename(options.unixSocket)}` : endpoint;
  const log = options.detachedLog !== undefined ? openSync(options.detachedLog, 'a', 0o600) : undefined;
  const child = spawn(
    binary,
    [
      '--name',
      name,
      '--data-dir',
      dataDir,
      '--listen-client-urls',
      listen,
      '--advertise-client-urls',
      endpoint,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `${name}=${peer}`,
      '--max-txn-ops',
      String(options.maxTxnOps ?? 128),
      ...(tls ? tlsArguments(tls, health) : []),
      '--log-level',
      'error',
    ],
    {
      stdio: ['ignore', 'ignore', log ?? 'pipe'],
      detached: log !== undefined,
      ...(options.unixSocket ? { cwd: dirname(options.unixSocket) } : {}),
    },
  );
  if (log !== undefined) {
    closeSync(log);
    child.unref();
  }
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const removeDir = (): void => {
    if (ownDir) rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitHealthy(health, child, () => stderr);
  } catch (error) {
    await stopChild(child);
    removeDir();
    throw error;
  }
  return {
    endpoint,
    ...(options.unixSocket ? { unixEndpoint: `${unix}://${options.unixSocket}` } : {}),
    pid: child.pid!,
    dataDir,
    stop: async () => {
      await stopChild(child);
      removeDir();
    },
  };
}

/** etcd's flags for client and peer TLS with client certificates, and a plain port for /health. */
function tlsArguments(tls: NonNullable<StartEtcdOptions['tls']>, health: string): string[] {
  return [
    '--client-cert-auth',
    '--trusted-ca-file',
    tls.caFile,
    '--cert-file',
    tls.certFile,
    '--key-file',
    tls.keyFile,
    '--peer-client-cert-auth',
    '--peer-trusted-ca-file',
    tls.caFile,
    '--peer-cert-file',
    tls.certFile,
    '--peer-key-file',
    tls.keyFile,
    '--listen-metrics-urls',
    health,
  ];
}

/**
 * Removes a unix socket nobody serves any more (etcd killed with SIGKILL leaves it behind, and
 * will not bind over it); refuses to touch one a live process still serves, or a file that is
 * not a socket.
 */
async function removeStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // nothing there
  }
  if (!isSocket) throw new Error(`${path} exists and is not a unix socket: not removing it`);
  const served = await new Promise<boolean>((resolve) => {
    const socket = connect({ path });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
  if (served) throw new Error(`another process serves ${path}: is an etcd still running there?`);
  unlinkSync(path);
}

/**
 * How long a starting etcd may take to answer healthy: a fresh one answers within a second, but
 * a clean-clone CI run at a load above 10 saw one take more than the 15 s allowed before.
 */
const HEALTHY_WITHIN_MS = 60_000;
/** One health request's limit: an etcd that accepted the connection but hangs is asked again. */
const HEALTH_REQUEST_MS = 5_000;

async function waitHealthy(endpoint: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + HEALTHY_WITHIN_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`etcd exited (${child.exitCode}): ${stderr().trim()}`);
    try {
      const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(HEALTH_REQUEST_MS) });
      if (response.ok && ((await response.json()) as { health?: unknown }).health === 'true') return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `etcd did not become healthy at ${endpoint} within ${HEALTHY_WITHIN_MS / 1000} s${stderr().trim() ? `: ${stderr().trim()}` : ''}`,
  );
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/**
 * A free loopback port, released before its user binds it. Taken below the kernel's ephemeral
 * range (`ip_local_port_range`), where the kernel never hands out a port to an outgoing
 * connection: a port from that range could be some connection's local port by the time a
 * restarted agent binds it again (seen in the fault suite: EADDRINUSE). Random, so that two
 * callers rarely try the same one; the kernel's own pick when none below the range is free.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let attempt = 0; attempt < 50 && low > FIXED_PORTS_FROM + 1; attempt++) {
    const port = FIXED_PORTS_FROM + Math.floor(Math.random() * (low - FIXED_PORTS_FROM));
    if (await bindable(port)) return port;
  }
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Below this, well-known and registered services live. */
const FIXED_PORTS_FROM = 10_000;

/** The first port of the kernel's ephemeral range (Linux's default 32768 when unreadable). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
