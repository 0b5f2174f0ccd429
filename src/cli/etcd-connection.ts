/**
 * How the commands that talk to etcd (reflect, agent, status) reach it and who they are there —
 * one set of options, read once into an EtcdConnection:
 *
 *   --etcd URL[,URL…]       http://, https://, unix:///path or unixs:///path (TLS over a socket)
 *   --etcd-cacert PATH      CA bundle verifying etcd's certificate     (etcdctl --cacert)
 *   --etcd-cert PATH        this client's certificate                  (etcdctl --cert)
 *   --etcd-key PATH         its key                                    (etcdctl --key)
 *   --etcd-user-file PATH   one line `user:password`                   (etcdctl --user)
 *
 * or PALISADE_ETCD_USER and PALISADE_ETCD_PASSWORD in the environment. A password is never a
 * command-line argument (every user of the machine reads those in /proc).
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { connectionProblems } from '../etcd/index.ts';
import type { EtcdConnection } from '../etcd/types.ts';
import { UsageError } from './io.ts';

/** The environment variables holding an etcd user name and password. */
const ETCD_USER_ENV = 'PALISADE_ETCD_USER';
const ETCD_PASSWORD_ENV = 'PALISADE_ETCD_PASSWORD';

/** Adds the etcd connection options to a command (`--etcd` is required unless `optional`). */
export function withEtcdOptions(command: Command, options: { optional?: boolean } = {}): Command {
  const etcd = [
    '--etcd <urls>',
    'etcd client URLs, comma-separated: http(s)://host:port or unix(s):///path',
  ] as const;
  return (options.optional ? command.option(...etcd) : command.requiredOption(...etcd))
    .option('--etcd-cacert <path>', "CA bundle verifying etcd's certificate (as etcdctl --cacert)")
    .option(
      '--etcd-cert <path>',
      'client certificate; with client-cert auth its CN is the etcd user (etcdctl --cert)',
    )
    .option('--etcd-key <path>', "the client certificate's key (etcdctl --key)")
    .option(
      '--etcd-user-file <path>',
      `etcd user and password, one line user:password (or ${ETCD_USER_ENV} and ${ETCD_PASSWORD_ENV})`,
    );
}

/** The URLs of an `--etcd` value; a usage error when there is none. */
function etcdEndpoints(value: unknown): string[] {
  const endpoints = String(value)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (endpoints.length === 0) throw new UsageError('--etcd needs at least one URL');
  return endpoints;
}

/** The connection the options and the environment describe; a UsageError (one line) otherwise. */
export function etcdConnection(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): EtcdConnection {
  const path = (name: string): string | undefined => {
    const value = raw[name];
    return typeof value === 'string' ? value : undefined;
  };
  const [caFile, certFile, keyFile] = [path('etcdCacert'), path('etcdCert'), path('etcdKey')];
  const user = etcdUser(path('etcdUserFile'), env);
  const connection: EtcdConnection = {
    endpoints: etcdEndpoints(raw.etcd),
    ...(caFile !== undefined ? { caFile } : {}),
    ...(certFile !== undefined ? { certFile } : {}),
    ...(keyFile !== undefined ? { keyFile } : {}),
    ...(user ? { user } : {}),
  };
  const problems = connectionProblems(connection).map((p) =>
    p.startsWith('a client certificate and its key') ? '--etcd-cert and --etcd-key go together' : p,
  );
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return connection;
}

/** The user from `--etcd-user-file` or the environment (not both); undefined: none. */
function etcdUser(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
): { name: string; password: string } | undefined {
  const [name, password] = [env[ETCD_USER_ENV] ?? '', env[ETCD_PASSWORD_ENV] ?? ''];
  const fromEnv = name !== '' || password !== '';
  if (file !== undefined && fromEnv)
    throw new UsageError(
      `give the etcd user in --etcd-user-file or in ${ETCD_USER_ENV}/${ETCD_PASSWORD_ENV}, not both`,
    );
  if (file !== undefined) return userFromFile(file);
  if (!fromEnv) return undefined;
  if (name === '' || password === '')
    throw new UsageError(`${ETCD_USER_ENV} and ${ETCD_PASSWORD_ENV} go together (both set, neither empty)`);
  return { name, password };
}

function userFromFile(file: string): { name: string; password: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code;
    throw new UsageError(`--etcd-user-file ${file}: cannot read it (${reason ?? (error as Error).message})`);
  }
  // One line; a final newline (an editor's, `echo`'s) is not part of the password.
  const lines = text.replace(/\r?\n$/, '').split(/\r?\n/);
  const colon = lines[0]!.indexOf(':');
  if (lines.length !== 1 || colon <= 0 || colon === lines[0]!.length - 1)
    throw new UsageError(`--etcd-user-file ${file}: expected one line user:password`);
  return { name: lines[0]!.slice(0, colon), password: lines[0]!.slice(colon + 1) };
}
