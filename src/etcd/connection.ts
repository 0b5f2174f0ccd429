/**
 * An EtcdConnection (endpoints, CA, client certificate, user) checked and turned into the etcd3
 * client's options: URL schemes as etcdctl has them (`https://` and `unixs://` speak TLS,
 * `http://` and `unix://` do not; a scheme-less `host:port` speaks TLS exactly when certificate
 * files are given), the PEM files read (one line naming the file when one cannot be), and a
 * deadline on every request. Nothing here talks to etcd.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { EtcdAccessError } from './errors.ts';
import type { EtcdConnection } from './types.ts';

/** Default deadline of one request (a read, a transaction, a lease grant); not of watches. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** What the etcd3 client is built with (the subset of its IOptions used here). */
interface ClientOptions {
  readonly hosts: string[];
  readonly dialTimeout: number;
  /** No rootCertificate: grpc's default roots (the system's), as for any https URL. */
  readonly credentials?: { rootCertificate?: Buffer; privateKey?: Buffer; certChain?: Buffer };
  readonly auth?: { username: string; password: string };
  readonly defaultCallOptions: (context: { isStream: boolean }) => { deadline?: number };
}

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/** Whether the endpoints speak TLS; a problem when they disagree or a scheme is unknown. */
function transport(connection: EtcdConnection): { tls: boolean; problems: string[] } {
  const problems: string[] = [];
  const files = connection.caFile !== undefined || connection.certFile !== undefined;
  const modes = new Set<boolean>();
  for (const endpoint of connection.endpoints) {
    const scheme = SCHEME.exec(endpoint)?.[1]?.toLowerCase();
    if (scheme === undefined) modes.add(files);
    else if (scheme === 'https' || scheme === 'unixs') modes.add(true);
    else if (scheme === 'http' || scheme === 'unix') modes.add(false);
    else problems.push(`${endpoint}: etcd URLs are http://, https://, unix:// or unixs://`);
  }
  if (modes.size > 1) problems.push(`${connection.endpoints.join(',')}: mixes TLS and plain endpoints`);
  const tls = modes.has(true);
  if (files && !tls)
    problems.push(
      `a CA or client certificate was given, but ${connection.endpoints.join(',')} is not TLS (use https:// or unixs://)`,
    );
  return { tls, problems };
}

/** Every problem with a connection's settings (empty: usable), without reading any file. */
export function connectionProblems(connection: EtcdConnection): string[] {
  const problems = connection.endpoints.length === 0 ? ['no etcd endpoint'] : transport(connection).problems;
  if ((connection.certFile === undefined) !== (connection.keyFile === undefined))
    problems.push('a client certificate and its key go together (give both, or neither)');
  if (connection.user && connection.user.name === '') problems.push('the etcd user name is empty');
  return problems;
}

/** The etcd3 client's options; throws EtcdAccessError (one line) for bad settings or unreadable files. */
export function clientOptions(connection: EtcdConnection): ClientOptions {
  const problems = connectionProblems(connection);
  if (problems.length > 0) throw new EtcdAccessError(problems.join('; '));
  const { tls } = transport(connection);
  const requestTimeout = connection.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const hosts = connection.endpoints.map((e) => e.replace(/^unixs:/i, 'unix:'));
  if (tls && hosts.some((h) => isIP(hostOf(h)) !== 0)) quietIpServernameWarning();
  return {
    hosts,
    dialTimeout: connection.dialTimeoutMs ?? 3000,
    ...(tls
      ? {
          credentials: {
            ...(connection.caFile ? { rootCertificate: readPem(connection.caFile, 'CA bundle') } : {}),
            ...(connection.certFile && connection.keyFile
              ? {
                  certChain: readPem(connection.certFile, 'client certificate'),
                  privateKey: readPem(connection.keyFile, 'client key'),
                }
              : {}),
          },
        }
      : {}),
    ...(connection.user
      ? { auth: { username: connection.user.name, password: connection.user.password } }
      : {}),
    // Watches and lease keepalives are streams and live on; every other call has a deadline, so
    // an etcd that stopped answering (paused, partitioned) fails a call instead of hanging it.
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + requestTimeout }),
  };
}

function readPem(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new EtcdAccessError(`cannot read the etcd ${what} ${path}: ${describeErrno(reason)}`);
  }
}

function describeErrno(code: string): string {
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
      return 'permission denied';
    case 'EISDIR':
      return 'a directory, not a file';
    default:
      return code;
  }
}

/** The host of `https://host:port` (brackets of IPv6 removed); '' for unix sockets. */
function hostOf(url: string): string {
  if (/^unix:/i.test(url)) return '';
  const authority = url.replace(SCHEME, '').split('/')[0] ?? '';
  const bracketed = /^\[([^\]]+)\]/.exec(authority);
  return bracketed ? bracketed[1]! : authority.replace(/:\d+$/, '');
}

let ipServernameQuieted = false;

/**
 * grpc-js names the TLS server by the URL's host even when that is an IP address; Node then
 * warns once per process that RFC 6066 forbids an IP as server name (DEP0123) — on stderr, in the
 * middle of `palisade status`. The certificate is still checked against the IP (its IP SANs),
 * which is what an `https://127.0.0.1:2379` endpoint means, so that one warning is dropped.
 */
function quietIpServernameWarning(): void {
  if (ipServernameQuieted) return;
  ipServernameQuieted = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = (...args: unknown[]) => {
    const code = typeof args[2] === 'string' ? args[2] : (args[1] as { code?: unknown } | undefined)?.code;
    if (code === 'DEP0123') return;
    emit(...args);
  };
}
