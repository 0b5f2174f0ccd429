/**
 * etcd's role-based access control, as data: roles granting read/write on keys, prefixes or key
 * ranges, users holding roles. `enableEtcdAuth` applies a plan to an etcd whose auth is still off
 * (creating `root`, which etcd requires before `auth enable`) and turns auth on; `etcdctlCommands`
 * spells the same plan as the etcdctl commands an operator runs (docs/commands/agent.md's are
 * that output). With `--client-cert-auth`, a client's certificate CN names its user, so users made for
 * certificates have no password.
 */
import type { Etcd3 } from 'etcd3';
import { prefixEnd } from './client.ts';
import { clientOptions } from './connection.ts';
import type { EtcdConnection } from './types.ts';

/** What one permission covers: one key, every key with a prefix, or the keys in [key, end). */
type EtcdKeys =
  { readonly key: string } | { readonly prefix: string } | { readonly from: string; readonly to: string };

interface EtcdPermission {
  readonly access: 'read' | 'write' | 'readwrite';
  readonly keys: EtcdKeys;
}

export interface EtcdRole {
  readonly name: string;
  readonly permissions: readonly EtcdPermission[];
}

export interface EtcdUser {
  readonly name: string;
  readonly roles: readonly string[];
  /** None: a user for a client certificate only (its CN). */
  readonly password?: string;
}

export interface EtcdAuthPlan {
  readonly roles: readonly EtcdRole[];
  readonly users: readonly EtcdUser[];
}

/** etcd's own superuser: holds the built-in `root` role (everything, and auth administration). */
export const ROOT_USER = 'root';

const PERMISSION_TYPE = { read: 'Read', write: 'Write', readwrite: 'Readwrite' } as const;

/** The [key, range_end) etcd stores for a permission (an empty end: the key alone). */
function keyRange(keys: EtcdKeys): { key: string; rangeEnd: string } {
  if ('key' in keys) return { key: keys.key, rangeEnd: '' };
  if ('prefix' in keys) return { key: keys.prefix, rangeEnd: prefixEnd(Buffer.from(keys.prefix)).toString() };
  return { key: keys.from, rangeEnd: keys.to };
}

/**
 * Creates the plan's roles and users (and `root`, without a password: its certificate's CN is
 * how it authenticates) on an etcd without auth, then enables auth. `admin` connects as `root`.
 */
export async function enableEtcdAuth(admin: EtcdConnection, plan: EtcdAuthPlan): Promise<void> {
  const { Etcd3 } = await import('etcd3');
  const client: Etcd3 = new Etcd3(clientOptions(admin) as ConstructorParameters<typeof Etcd3>[0]);
  try {
    const auth = client.auth;
    const users = [{ name: ROOT_USER, roles: ['root'] }, ...plan.users.filter((u) => u.name !== ROOT_USER)];
    for (const role of plan.roles) {
      await auth.roleAdd({ name: role.name });
      for (const permission of role.permissions) {
        const { key, rangeEnd } = keyRange(permission.keys);
        await auth.roleGrantPermission({
          name: role.name,
          perm: {
            permType: PERMISSION_TYPE[permission.access],
            key: Buffer.from(key),
            range_end: Buffer.from(rangeEnd),
          },
        });
      }
    }
    for (const user of users) {
      const password = 'password' in user ? user.password : undefined;
      await auth.userAdd({
        name: user.name,
        password: password ?? '',
        ...(password === undefined ? { options: { no_password: true } } : {}),
      });
      for (const role of user.roles) await auth.userGrantRole({ user: user.name, role });
    }
    await auth.authEnable();
  } finally {
    client.close();
  }
}

/** The plan as etcdctl commands (3.4+), in the order they must run; `auth enable` last. */
export function etcdctlCommands(plan: EtcdAuthPlan): string[] {
  const quote = (word: string): string => (/^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word}'`);
  const lines = ['etcdctl user add root --no-password', 'etcdctl user grant-role root root'];
  for (const role of plan.roles) {
    lines.push(`etcdctl role add ${quote(role.name)}`);
    for (const { access, keys } of role.permissions) {
      const [flag, target] =
        'key' in keys
          ? ['', quote(keys.key)]
          : 'prefix' in keys
            ? ['--prefix ', quote(keys.prefix)]
            : ['', `${quote(keys.from)} ${quote(keys.to)}`];
      lines.push(`etcdctl role grant-permission ${flag}${quote(role.name)} ${access} ${target}`);
    }
  }
  for (const user of plan.users) {
    lines.push(
      user.password === undefined
        ? `etcdctl user add ${quote(user.name)} --no-password`
        : `etcdctl user add ${quote(user.name)}   # asks for the password`,
    );
    for (const role of user.roles) lines.push(`etcdctl user grant-role ${quote(user.name)} ${quote(role)}`);
  }
  lines.push('etcdctl auth enable');
  return lines;
}
