/**
 * A real OpenStack Neutron API server (Debian's `neutron-server`) started on loopback for tests,
 * benchmarks and trying the Neutron controller: noauth, no message bus (`fake:/`), ML2 with no
 * mechanism driver (no L2 agent: ports stay unbound, which Neutron allows), one API process, a
 * free port, and everything — configuration, SQLite database, locks, log — in a temp dir that
 * stop() removes after stopping the process by pid.
 *
 * Neutron's migrations only run on MariaDB or PostgreSQL; the SQLite schema (WAL journal) is created from
 * Neutron's own models (`neutron.db.migration.models.head`) and then stamped at the migration
 * heads with `neutron-db-manage`, so the server finds the schema it expects. The server code,
 * its validation, its quotas and its database layer are the ones production runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian installs Neutron's server; `PALISADE_NEUTRON_SERVER` overrides. */
function neutronServerBinary(
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const candidates = [env.PALISADE_NEUTRON_SERVER, '/usr/bin/neutron-server'];
  return candidates.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
}

/** Why a local Neutron cannot start here (one line), or undefined when it can. */
export function neutronUnavailable(): string | undefined {
  if (!neutronServerBinary())
    return 'neutron-server is not installed (apt-get install neutron-server python3-neutron)';
  if (!existsSync('/usr/bin/neutron-db-manage'))
    return 'neutron-db-manage is not installed (python3-neutron)';
  return undefined;
}

export interface NeutronServer {
  /** The API's root URL (`http://127.0.0.1:PORT`). */
  readonly url: string;
  readonly pid: number;
  readonly dir: string;
  /** Stops the server (SIGTERM, then SIGKILL) and removes its directory. */
  stop(): Promise<void>;
}

interface StartNeutronOptions {
  /** API port (default: a free one). */
  readonly port?: number;
  /** Default quotas per project (Neutron's own defaults are 10 groups and 100 rules). */
  readonly quotas?: { readonly securityGroups?: number; readonly rules?: number; readonly ports?: number };
  /**
   * How long to wait for the schema and then the API, ms each (default 300 s). Quiet, a start takes
   * 10–20 s; the first on a fresh machine reads Neutron's thousands of Python modules from a cold
   * disk, and in CI beside a whole test suite it took more than 90 s to log a line.
   */
  readonly timeoutMs?: number;
}

const PYTHON = '/usr/bin/python3';

/**
 * The schema from Neutron's models (its migrations need MariaDB or PostgreSQL), then stamped at
 * the migration heads as `neutron-db-manage stamp heads` does — one Python process for both.
 */
const CREATE_SCHEMA = `
import sys, sqlalchemy
from neutron.db.migration.models import head
engine = sqlalchemy.create_engine(sys.argv[1])
head.get_metadata().create_all(engine)
with engine.connect() as connection:
    connection.exec_driver_sql('PRAGMA journal_mode=WAL')
engine.dispose()
from neutron.db.migration import cli
sys.argv = ['neutron-db-manage', '--config-file', sys.argv[2], 'stamp', 'heads']
cli.main()
`;

function configuration(dir: string, port: number, options: StartNeutronOptions): string {
  const quotas = options.quotas ?? {};
  return `[DEFAULT]
auth_strategy = noauth
transport_url = fake:/
core_plugin = ml2
service_plugins =
api_workers = 0
rpc_workers = 0
rpc_state_report_workers = 0
bind_host = 127.0.0.1
bind_port = ${port}
state_path = ${dir}/state
use_stderr = false
log_file = ${dir}/neutron-server.log
debug = false
[database]
# SQLite in WAL mode (set when the schema is made): reads never wait for a write. Writes of the
# API and its worker processes wait for each other up to 20 s (the default 5 s failed writes with
# a 500 on a loaded machine).
connection = sqlite:///${dir}/neutron.sqlite?timeout=20
[ml2]
type_drivers = local,flat
tenant_network_types = local
mechanism_drivers =
extension_drivers = port_security
[oslo_concurrency]
lock_path = ${dir}/lock
[quotas]
quota_security_group = ${quotas.securityGroups ?? 1000}
quota_security_group_rule = ${quotas.rules ?? 100000}
quota_port = ${quotas.ports ?? 10000}
quota_network = 100
quota_subnet = 100
`;
}

export async function startNeutron(options: StartNeutronOptions = {}): Promise<NeutronServer> {
  const binary = neutronServerBinary();
  const unavailable = neutronUnavailable();
  if (!binary || unavailable) throw new Error(unavailable ?? 'neutron-server is not installed');
  const dir = mkdtempSync(join(tmpdir(), `palisade-neutron-${process.pid}-`));
  let child: ChildProcess | undefined;
  try {
    for (const sub of ['state', 'lock']) mkdirSync(join(dir, sub));
    const port = options.port ?? (await freePort());
    const conf = join(dir, 'neutron.conf');
    writeFileSync(conf, configuration(dir, port, options));
    const timeoutMs = options.timeoutMs ?? 300_000;
    await run(
      PYTHON,
      ['-c', CREATE_SCHEMA, `sqlite:///${dir}/neutron.sqlite`, conf],
      'creating the schema',
      timeoutMs,
    );
    // Its own process group: neutron-server forks workers (RPC, periodic), stopped with it.
    child = spawn(binary, ['--config-file', conf], { stdio: 'ignore', detached: true });
    favour(child);
    const url = `http://127.0.0.1:${port}`;
    await waitServing(url, child, dir, timeoutMs);
    const started = child;
    return {
      url,
      pid: started.pid!,
      dir,
      stop: async () => {
        try {
          await stopChild(started);
          // For a failure's post-mortem: the server's log, kept where PALISADE_NEUTRON_LOG says.
          const keep = process.env.PALISADE_NEUTRON_LOG;
          if (keep) copyFileSync(join(dir, 'neutron-server.log'), keep);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    if (child) await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * A higher CPU priority for the server (and the workers it forks, which inherit it), where that
 * is allowed (root): in a cloud Neutron runs on machines of its own, while here it shares a few
 * cores with whatever else runs — a whole test suite, in CI — and at equal priority a loaded
 * machine slowed its API (Python, one process) to minutes per change.
 */
function favour(child: ChildProcess): void {
  if (child.pid === undefined || process.getuid?.() !== 0) return;
  try {
    setPriority(child.pid, -5);
  } catch {
    // not permitted: it runs at the caller's priority
  }
}

/** Runs a Python step to its end, favoured like the server, without blocking the event loop. */
async function run(command: string, args: readonly string[], what: string, timeoutMs: number): Promise<void> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  favour(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const outcome = await new Promise<{ status: number | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ status: null, error }));
    child.once('close', (status, signal) =>
      resolve(
        signal === 'SIGKILL' ? { status, error: new Error(`no end within ${timeoutMs} ms`) } : { status },
      ),
    );
  });
  clearTimeout(timer);
  if (outcome.status !== 0 || outcome.error)
    throw new Error(
      `local Neutron: ${what} failed (${outcome.error?.message ?? `exit ${String(outcome.status)}`}): ${stderr.trim().split('\n').slice(-3).join(' ')}`,
    );
}

async function waitServing(url: string, child: ChildProcess, dir: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`neutron-server exited (${String(child.exitCode)}): ${logTail(dir)}`);
    try {
      const response = await fetch(`${url}/v2.0/extensions`, { signal: AbortSignal.timeout(2000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`neutron-server did not answer at ${url} within ${timeoutMs} ms: ${logTail(dir)}`);
}

function logTail(dir: string): string {
  try {
    return readFileSync(join(dir, 'neutron-server.log'), 'utf8').trim().split('\n').slice(-3).join(' | ');
  } catch {
    return '(no log)';
  }
}

/**
 * SIGTERM to the server's process group, SIGKILL after 5 s; done when the server has exited (Node
 * reaps it) and no process of its group is left running — its workers, reparented to PID 1 when
 * the server exits first, count as gone once they are zombies (PID 1 may never reap them).
 */
async function stopChild(child: ChildProcess): Promise<void> {
  const group = child.pid!;
  const signal = (name: NodeJS.Signals): void => {
    try {
      process.kill(-group, name);
    } catch {
      // the group is gone
    }
  };
  const exited =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once('exit', () => resolve()));
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 5000);
  await exited;
  const deadline = Date.now() + 10_000;
  while (groupRunning(group) && Date.now() < deadline) {
    if (Date.now() > deadline - 5000) signal('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  clearTimeout(timer);
}

/** Whether a process of the group runs (a zombie does not). */
function groupRunning(group: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // After the command's closing parenthesis: state, ppid, pgrp.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === group && fields[0] !== 'Z') return true;
  }
  return false;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
