/**
 * Helpers for reflector tests: what etcd should hold for the fake API server's current objects
 * (each object through the codec), what it does hold, waiting for the two to agree, and a
 * reflector wired to the fake server and a store.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect } from '../../src/kube/index.ts';
import type { EtcdStore } from '../../src/etcd/index.ts';
import { Reflector, type ReflectorOptions } from '../../src/reflector/index.ts';
import { KeyLayout, encodeObject } from '../../src/reflected/index.ts';
import type { FakeApiServer } from '../fake-apiserver/server.ts';
import { withTypeMeta } from '../fake-apiserver/store.ts';
import { writeKubeconfig } from '../fake-apiserver/fixtures.ts';
import { cli } from '../helpers/cli.ts';

export const layout = new KeyLayout('/palisade');

/** key → reduced value, for every object of the fake cluster that belongs in etcd. */
export function expectedContents(server: FakeApiServer, keys: KeyLayout = layout): Map<string, string> {
  const expected = new Map<string, string>();
  for (const resource of server.store.resources) {
    if (server.store.absent.has(resource.plural)) continue;
    for (const stored of server.store.snapshot(resource, undefined).items) {
      const object = JSON.parse(withTypeMeta(resource, stored.itemJson)) as Record<string, unknown>;
      let encoded;
      try {
        encoded = encodeObject(keys, object, 'test');
      } catch {
        continue;
      }
      if (encoded.value !== undefined) expected.set(encoded.key, encoded.value);
    }
  }
  return expected;
}

/** key → value of everything under the layout's objects prefix. */
export async function etcdContents(store: EtcdStore, keys: KeyLayout = layout): Promise<Map<string, string>> {
  const { kvs } = await store.range(keys.objects);
  return new Map(kvs.map((kv) => [kv.key, kv.value]));
}

/**
 * Waits until etcd holds exactly what the fake cluster says; fails with the difference. The
 * deadline only bounds a hang (it polls, so a passing test returns as soon as etcd agrees): 15 s
 * was missed with test files running side by side on a machine at load 30.
 */
export async function converged(
  server: FakeApiServer,
  store: EtcdStore,
  ms = 60_000,
  keys: KeyLayout = layout,
): Promise<void> {
  const deadline = Date.now() + ms;
  let difference = '';
  for (;;) {
    const expected = expectedContents(server, keys);
    const actual = await etcdContents(store, keys);
    difference = diff(expected, actual);
    if (!difference) return;
    if (Date.now() > deadline) throw new Error(`etcd did not converge:\n${difference}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function diff(expected: Map<string, string>, actual: Map<string, string>): string {
  const lines: string[] = [];
  for (const [key, value] of expected) {
    const got = actual.get(key);
    if (got === undefined) lines.push(`missing ${key}`);
    else if (got !== value) lines.push(`differs ${key}:\n  want ${value}\n  have ${got}`);
  }
  for (const key of actual.keys()) if (!expected.has(key)) lines.push(`extra ${key}`);
  return lines.slice(0, 20).join('\n');
}

/** A reflector reading the fake server through a kubeconfig in `dir`. */
export async function apiReflector(
  server: FakeApiServer,
  store: EtcdStore,
  dir: string,
  options: Omit<Partial<ReflectorOptions>, 'log'> & { log?: string[] } = {},
): Promise<{ reflector: Reflector; running: Promise<unknown> }> {
  const kubeconfig = writeKubeconfig(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`, {
    server: server.serverUrl,
  });
  const api = await connect({ kubeconfig, env: {} });
  const { log: lines, ...rest } = options;
  const log = lines ?? [];
  const reflector = new Reflector({
    store,
    layout,
    source: { type: 'api', api, scope: { all: true } },
    leaseTtlSeconds: 2,
    log: (line) => log.push(line),
    onDiagnostics: (diagnostics) => log.push(...diagnostics.map((d) => `${d.severity} ${d.code} ${d.file}`)),
    ...rest,
  });
  const running = reflector.run();
  return { reflector, running };
}

export async function until(check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Waits until etcd's revision has not moved for `quietMs` (the reflector has written all it
 * will). 300 ms was taken for quiet once at load 40 while the reflector still had a write coming,
 * and a test counting transactions then counted one too many.
 */
export async function settled(store: EtcdStore, quietMs = 1_000): Promise<number> {
  let revision = (await store.range(layout.leader)).revision;
  let since = Date.now();
  for (;;) {
    await new Promise((r) => setTimeout(r, 25));
    const now = (await store.range(layout.leader)).revision;
    if (now !== revision) {
      revision = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return revision;
    }
  }
}

/** Writes `objects` to `file` as manifests and reflects them (`reflect -f FILE --once`) under `root`. */
export async function reflectManifests(
  endpoint: string,
  root: string,
  file: string,
  objects: readonly object[],
): Promise<void> {
  writeFileSync(file, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
  const result = await cli(['reflect', '--etcd', endpoint, '--prefix', root, '-f', file, '--once']);
  assert.equal(result.code, 0, result.stderr);
}
