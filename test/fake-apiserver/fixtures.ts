/**
 * Helpers around the fake API server for tests: a kubeconfig that points at it (in a temp dir
 * removed by `cleanup`), loading manifests into its store, and self-signed certificates.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { FakeStore } from './store.ts';

export interface KubeconfigOptions {
  readonly server: string;
  readonly token?: string;
  /** PEM of the CA to trust (certificate-authority-data). */
  readonly ca?: string;
  readonly context?: string;
  readonly namespace?: string;
}

/** A kubeconfig YAML with one context for a server. */
export function kubeconfigYaml(options: KubeconfigOptions): string {
  const name = options.context ?? 'fake';
  const lines = [
    'apiVersion: v1',
    'kind: Config',
    `current-context: ${name}`,
    'clusters:',
    `- name: ${name}-cluster`,
    '  cluster:',
    `    server: ${options.server}`,
    ...(options.ca ? [`    certificate-authority-data: ${Buffer.from(options.ca).toString('base64')}`] : []),
    'users:',
    `- name: ${name}-user`,
    '  user:',
    ...(options.token ? [`    token: ${options.token}`] : ['    username: nobody', '    password: nothing']),
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}-cluster`,
    `    user: ${name}-user`,
    ...(options.namespace ? [`    namespace: ${options.namespace}`] : []),
  ];
  return lines.join('\n') + '\n';
}

/** A temp dir for kubeconfigs and certificates; `cleanup` removes it. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `palisade-${prefix}-${process.pid}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function writeKubeconfig(dir: string, file: string, options: KubeconfigOptions): string {
  const path = join(dir, file);
  writeFileSync(path, kubeconfigYaml(options));
  return path;
}

/** Every object in YAML/JSON files (Lists unrolled), as plain objects. */
export function readManifests(paths: readonly string[]): Record<string, unknown>[] {
  const objects: Record<string, unknown>[] = [];
  for (const path of paths) {
    for (const document of parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' })) {
      const value = document.toJS() as Record<string, unknown> | null;
      if (!value) continue;
      if (Array.isArray(value.items)) objects.push(...(value.items as Record<string, unknown>[]));
      else objects.push(value);
    }
  }
  return objects;
}

/** Loads objects into the fake's store; kinds it does not serve (Services…) are left out. */
export function loadStore(store: FakeStore, objects: readonly Record<string, unknown>[]): number {
  let count = 0;
  for (const object of objects) {
    if (!store.resources.some((r) => r.kind === object.kind)) continue;
    store.apply(object);
    count++;
  }
  return count;
}

/** A self-signed certificate for 127.0.0.1 (openssl), or undefined when openssl is missing. */
export function selfSignedCertificate(dir: string): { key: string; cert: string } | undefined {
  const openssl = ['/usr/bin/openssl', '/bin/openssl'].find((p) => existsSync(p));
  if (!openssl) return undefined;
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    openssl,
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}
