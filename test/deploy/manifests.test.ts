/**
 * deploy/ is what an operator applies, so every way of installing is rendered (kustomize.ts: the
 * part of kustomize deploy/ uses; compared with `kubectl kustomize` where kubectl is installed)
 * and checked:
 * - against the vendored Kubernetes OpenAPI schemas of each supported version, strictly (an
 *   unknown field is an error, as `kubectl apply --validate=strict` says);
 * - by `palisade validate`, which reads them without a warning;
 * - for least privilege: no `*` in any role, and the reader role grants get/list/watch on exactly
 *   the kinds Palisade reads (src/kube/resources.ts);
 * - for what the agent's DaemonSet promises: capabilities instead of privileged, NODE_NAME from
 *   spec.nodeName, probes on the port it listens on, every taint tolerated, node-critical
 *   priority, and a rolling update that never surges (the old agent's table stays until the new
 *   one's first snapshot);
 * - deploy/install.yaml holds the objects `kubectl kustomize deploy/direct` renders.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { parseAllDocuments, stringify } from 'yaml';
import { ALL_RESOURCES } from '../../src/kube/index.ts';
import { cli } from '../helpers/cli.ts';
import { INSTALLS, render, sortedObjects, type Json } from './kustomize.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const DEPLOY = join(ROOT, 'deploy');
const SCHEMAS = join(ROOT, 'test', 'fixtures', 'k8s-openapi');
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => existsSync(p));

const yamlOf = (objects: readonly Json[]): string => objects.map((o) => stringify(o)).join('---\n');

/**
 * A schema as a strict validator reads it: objects with properties admit no others; IntOrString is
 * a string or an integer (its schema says string, with a format ajv does not know).
 */
function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) out[key] = strict(value);
  if (out.format === 'int-or-string') return { anyOf: [{ type: 'string' }, { type: 'integer' }] };
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

const compiled = new Map<string, (object: Json) => string[]>();

/** A strict validator of objects against a version's vendored schemas (compiled once). */
function validators(version: string): (object: Json) => string[] {
  const known = compiled.get(version);
  if (known) return known;
  const vendored = JSON.parse(readFileSync(join(SCHEMAS, `${version}.json`), 'utf8')) as {
    roots: Record<string, string>;
    schemas: Json;
  };
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ components: { schemas: strict(vendored.schemas) } }, 'k8s');
  const check = (object: Json): string[] => {
    const root = vendored.roots[`${String(object.apiVersion)}/${String(object.kind)}`];
    if (!root) return [`no ${version} schema for ${String(object.apiVersion)} ${String(object.kind)}`];
    const validate = ajv.getSchema(`k8s#/components/schemas/${root}`)!;
    if (validate(object)) return [];
    return (validate.errors ?? []).map(
      (e) =>
        `${e.instancePath || '/'} ${e.message ?? ''}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
    );
  };
  compiled.set(version, check);
  return check;
}

const name = (o: Json): string => `${String(o.kind)} ${String((o.metadata as Json).name)}`;

describe('deploy/', () => {
  const versions = readdirSync(SCHEMAS)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -5));

  it('holds valid objects for every supported Kubernetes version, strictly', () => {
    assert.deepEqual(versions.sort(), ['1.30', '1.35']);
    const checks = versions.map((v) => [v, validators(v)] as const);
    for (const install of INSTALLS)
      for (const object of render(install))
        for (const [version, validate] of checks)
          assert.deepEqual(validate(object), [], `${install}: ${name(object)} against Kubernetes ${version}`);
  });

  it('finds an unknown field and a wrong type (the check can fail)', () => {
    const validate = validators('1.35');
    const daemonSet = render('direct').find((o) => o.kind === 'DaemonSet')!;
    const spec = daemonSet.spec as Json;
    assert.match(
      validate({ ...daemonSet, spec: { ...spec, surge: 1 } }).join('\n'),
      /additional properties \(surge\)/,
    );
    assert.match(
      validate({ ...daemonSet, spec: { ...spec, minReadySeconds: 'soon' } }).join('\n'),
      /must be integer/,
    );
  });

  it('is read by palisade validate without a warning', async () => {
    for (const install of INSTALLS) {
      const result = await cli(['validate', '-f', '-'], { stdin: yamlOf(render(install)) });
      assert.equal(result.code, 0, `${install}: ${result.stdout}${result.stderr}`);
      assert.match(result.stdout, /0 errors, 0 warnings/, install);
    }
  });

  it('grants least privilege: no *, and exactly get/list/watch on what Palisade reads', () => {
    for (const install of INSTALLS)
      for (const role of render(install).filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role'))
        for (const rule of role.rules as Json[])
          for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames'])
            assert.ok(
              !((rule[field] as string[] | undefined) ?? []).includes('*'),
              `${install}: ${name(role)} ${field}`,
            );
    const reader = render('direct').find(
      (o) => o.kind === 'ClusterRole' && name(o).endsWith('palisade-reader'),
    )!;
    const granted = (reader.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[]).flatMap(
      (rule) => {
        assert.deepEqual([...rule.verbs].sort(), ['get', 'list', 'watch']);
        return rule.apiGroups.flatMap((group) => rule.resources.map((resource) => `${group}/${resource}`));
      },
    );
    assert.deepEqual(granted.sort(), ALL_RESOURCES.map((r) => `${r.group}/${r.plural}`).sort());
    const nodeRole = render('reflected').find((o) => name(o) === 'ClusterRole palisade-agent-node')!;
    assert.deepEqual(nodeRole.rules, [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }]);
  });

  it("keeps the agent DaemonSet's promises", () => {
    for (const install of INSTALLS) {
      const daemonSet = render(install).find((o) => o.kind === 'DaemonSet')!;
      const spec = (daemonSet.spec as Json).template as { spec: Json };
      const pod = spec.spec;
      const [container] = pod.containers as Json[];
      const security = container!.securityContext as Json;
      const args = container!.args as string[];
      assert.notEqual(security.privileged, true, install);
      assert.deepEqual((security.capabilities as Json).drop, ['ALL'], install);
      assert.ok(((security.capabilities as Json).add as string[]).includes('NET_ADMIN'), install);
      assert.equal(pod.hostNetwork, true);
      assert.equal(pod.priorityClassName, 'system-node-critical');
      assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
      assert.deepEqual((daemonSet.spec as Json).updateStrategy, {
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
      });
      assert.deepEqual(
        (container!.env as Json[]).find((e) => e.name === 'NODE_NAME'),
        { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
        install,
      );
      const port = Number(args[args.indexOf('--listen') + 1]!.split(':').at(-1));
      assert.deepEqual((container!.livenessProbe as Json).httpGet, { path: '/healthz', port }, install);
      assert.deepEqual((container!.readinessProbe as Json).httpGet, { path: '/readyz', port }, install);
      assert.ok(
        (container!.volumeMounts as Json[]).some((m) => m.mountPath === args[args.indexOf('--run-dir') + 1]),
        `${install}: the run directory is mounted`,
      );
    }
    const ebpf = render('overlays/direct-ebpf').find((o) => o.kind === 'DaemonSet')!;
    const ebpfText = JSON.stringify(ebpf);
    assert.match(ebpfText, /"--datapath","ebpf"/);
    assert.match(ebpfText, /"mountPath":"\/sys\/fs\/bpf"/);
  });

  it('ships install.yaml as the direct mode renders', () => {
    const shipped = parseAllDocuments(readFileSync(join(DEPLOY, 'install.yaml'), 'utf8')).map(
      (d) => d.toJS() as Json,
    );
    assert.deepEqual(
      sortedObjects(shipped),
      sortedObjects(render('direct')),
      'regenerate: kubectl kustomize deploy/direct',
    );
  });

  it(
    'renders as kubectl kustomize renders',
    { skip: KUBECTL ? false : 'skipped: no kubectl to compare with' },
    () => {
      for (const install of INSTALLS) {
        const text = execFileSync(KUBECTL!, ['kustomize', join(DEPLOY, install)], { encoding: 'utf8' });
        const theirs = parseAllDocuments(text).map((d) => d.toJS() as Json);
        assert.deepEqual(sortedObjects(render(install)), sortedObjects(theirs), install);
      }
    },
  );
});
