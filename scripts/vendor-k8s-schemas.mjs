#!/usr/bin/env node
/**
 * Vendors the Kubernetes OpenAPI v3 schemas that deploy/'s manifests need, for the versions
 * Palisade supports, into test/fixtures/k8s-openapi/<version>.json: for each kind deploy/ uses,
 * its schema and every schema it refers to, with descriptions dropped (they are most of the
 * bytes). The source is the per-version OpenAPI v3 documents kubectl-validate ships (generated from
 * Kubernetes; Apache-2.0): a checkout of github.com/kubernetes-sigs/kubectl-validate, given as the
 * first argument. Run again to move to other versions; test/deploy/manifests.test.ts reads the output.
 *
 *   node scripts/vendor-k8s-schemas.mjs ../kubectl-validate 1.30 1.35
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import console from 'node:console';

const [checkout, ...versions] = process.argv.slice(2);
if (!checkout || versions.length === 0) {
  console.error('usage: vendor-k8s-schemas.mjs KUBECTL_VALIDATE_CHECKOUT VERSION…');
  process.exit(2);
}
/** group/version document → the kinds deploy/ uses from it. */
const KINDS = {
  'api/v1': ['Namespace', 'ServiceAccount', 'ConfigMap', 'Service'],
  'apis/apps/v1': ['DaemonSet', 'Deployment', 'StatefulSet'],
  'apis/rbac.authorization.k8s.io/v1': ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'],
  'apis/batch/v1': ['Job'],
};
const out = join(import.meta.dirname, '..', 'test', 'fixtures', 'k8s-openapi');
mkdirSync(out, { recursive: true });

function strip(value) {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  const kept = {};
  for (const [key, inner] of Object.entries(value)) if (key !== 'description') kept[key] = strip(inner);
  return kept;
}

for (const version of versions) {
  const schemas = {};
  const roots = {};
  for (const [document, kinds] of Object.entries(KINDS)) {
    const path = join(checkout, 'pkg', 'openapiclient', 'builtins', version, `${document}.json`);
    const all = JSON.parse(readFileSync(path, 'utf8')).components.schemas;
    const [group, apiVersion] = document === 'api/v1' ? ['', 'v1'] : document.slice(5).split('/');
    const visit = (name) => {
      if (schemas[name]) return;
      schemas[name] = strip(all[name]);
      JSON.stringify(all[name]).replace(/"#\/components\/schemas\/([^"]+)"/g, (_, ref) => visit(ref));
    };
    for (const kind of kinds) {
      const name = Object.keys(all).find((n) =>
        (all[n]['x-kubernetes-group-version-kind'] ?? []).some(
          (g) => g.kind === kind && g.group === group && g.version === apiVersion,
        ),
      );
      if (!name) throw new Error(`${version}: no schema for ${kind} in ${document}`);
      roots[`${group ? `${group}/` : ''}${apiVersion}/${kind}`] = name;
      visit(name);
    }
  }
  const file = join(out, `${version}.json`);
  writeFileSync(
    file,
    JSON.stringify({ version, source: 'kubernetes-sigs/kubectl-validate', roots, schemas }) + '\n',
  );
  console.log(`${file}: ${Object.keys(roots).length} kinds, ${Object.keys(schemas).length} schemas`);
}
