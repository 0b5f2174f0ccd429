/**
 * Calico's and Cilium's policy, Services and policies of other engines as a user meets them on
 * the command line, over the bundled shop (workload templates, no pods running): check names the
 * Calico tier and order or the Cilium rule that decided; nothing in the input is left out without
 * a located warning and a note in the answer; a Service is answered for the workloads behind it
 * on its targetPort; a pod to itself is allowed, and said to be.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const SHOP = ['-f', 'examples/shop'];
const CALICO = [...SHOP, '-f', 'examples/engines/calico.yaml'];
const CILIUM = [...SHOP, '-f', 'examples/engines/cilium.yaml'];

/** `check` over an input, from one end to the other, with any further arguments. */
const check = (input: readonly string[], from: string, to: string, ...rest: string[]) =>
  cli(['check', ...input, '--from', from, '--to', to, ...rest]);

describe('check with Calico policy', () => {
  it('names the tier, policy, order and rule that denied', async () => {
    const r = await check(
      CALICO,
      'monitoring/prometheus',
      'payments/gateway',
      '--port',
      'metrics',
      '--expect',
      'deny',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /DENIED\n/);
    assert.match(
      r.stdout,
      /denied by gnp\/security\.payments-lockdown ingress\[0\] \(tier security, order 10\)/,
    );
  });
  it("passes what the tier's Pass rule matches on to the NetworkPolicies, also for workloads without addresses", async () => {
    // The Pass rule names no source: every endpoint — a template has no address a block could match.
    const r = await check(CALICO, 'shop/api', 'payments/gateway', '--port', '8443', '--expect', 'allow');
    assert.equal(r.code, 0, r.stdout);
    assert.match(
      r.stdout,
      /\[security\] pass \(gnp\/security\.payments-lockdown, order 10, ingress\[1\]\) → \[default\] allowed \(payments\/gateway, ingress\[0\]\)/,
    );
  });
});

describe('check with Cilium policy', () => {
  it('names the deny rule that wins over every allow', async () => {
    const r = await check(
      CILIUM,
      'monitoring/prometheus',
      '169.254.169.254',
      '--port',
      '80',
      '--expect',
      'deny',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /egress {2}deny {3}denied by ccnp\/no-metadata egressDeny\[0\] for 169\.254\.169\.254 on TCP\/80/,
    );
    const other = await check(
      CILIUM,
      'monitoring/prometheus',
      '203.0.113.9',
      '--port',
      '80',
      '--expect',
      'allow',
    );
    assert.equal(other.code, 0, other.stdout);
  });
});

describe("another engine's policy", () => {
  it('is a located warning, and check, matrix and explain say their answer leaves it out', async (t) => {
    const dir = await tempDir(t, 'palisade-engines-');
    const file = join(dir, 'antrea.yaml');
    await writeFile(
      file,
      'apiVersion: crd.antrea.io/v1beta1\nkind: NetworkPolicy\nmetadata: {name: lockdown, namespace: shop}\nspec: {appliedTo: [{podSelector: {}}]}\n',
    );
    const input = [...SHOP, '-f', file];
    const answer = await check(input, 'shop/frontend', 'shop/api', '--port', 'http');
    assert.match(answer.stderr, new RegExp(`^${file}:1:1: warning POLICY_KIND_NOT_EVALUATED: .*Antrea`, 'm'));
    assert.match(
      answer.stdout,
      // With its API group: Antrea's NetworkPolicy must not read as a Kubernetes one.
      /note: the input holds policy this answer does not include \(NetworkPolicy\.crd\.antrea\.io shop\/lockdown\)/,
    );
    const json = await check(input, 'shop/frontend', 'shop/api', '--port', 'http', '-o', 'json');
    assert.deepEqual((JSON.parse(json.stdout) as { notEvaluated: string[] }).notEvaluated, [
      'NetworkPolicy.crd.antrea.io shop/lockdown',
    ]);
    for (const command of [['matrix', '--port', '80'], ['explain']]) {
      const r = await cli([...command, ...input]);
      assert.match(
        r.stdout + r.stderr,
        /does not include \(NetworkPolicy\.crd\.antrea\.io shop\/lockdown\)|not evaluate/,
        command[0],
      );
    }
    // Without it, no note and no notEvaluated.
    const plain = await check(SHOP, 'shop/frontend', 'shop/api', '--port', 'http', '-o', 'json');
    assert.equal((JSON.parse(plain.stdout) as { notEvaluated?: string[] }).notEvaluated, undefined);
  });
});

describe('a rule Palisade reads only in part', () => {
  it('is said to be evaluated in part, not left out', async (t) => {
    const dir = await tempDir(t, 'palisade-engines-');
    const file = join(dir, 'l7.yaml');
    await writeFile(
      file,
      'apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: l7, namespace: shop}\nspec:\n  endpointSelector: {matchLabels: {app: api}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: frontend}}]\n    toPorts: [{ports: [{port: "8080", protocol: TCP}], rules: {http: [{method: GET}]}}]\n',
    );
    const answer = await check([...SHOP, '-f', file], 'shop/frontend', 'shop/api', '--port', 'http');
    assert.match(answer.stderr, /warning RULE_NOT_ANALYSED/);
    assert.match(
      answer.stdout,
      /note: the input holds rules this answer evaluates only in part \(of CiliumNetworkPolicy shop\/l7\): see the warnings/,
    );
    assert.doesNotMatch(answer.stdout, /does not include/);
  });
});

describe('Services', () => {
  it('answers for the workloads behind a Service on its targetPort', async () => {
    for (const to of ['shop/api[Service]', 'svc/shop/api']) {
      const r = await check(SHOP, 'shop/frontend', to, '--port', '80');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^shop\/frontend → shop\/api\[Service\] TCP\/80: ALLOWED\n/);
      assert.match(r.stdout, /shop\/api\[Service\] port 80\/TCP → targetPort http on shop\/api \(8000\)/);
    }
    const ports = await cli(['check', ...SHOP, '--from', 'shop/frontend', '--to', 'svc/shop/api']);
    assert.match(ports.stdout, /port 80\/TCP → targetPort http: allowed/);
    const db = await check(SHOP, 'shop/db', 'svc/shop/api', '--port', '80');
    assert.match(db.stdout, /TCP\/80: DENIED/);
    const missing = await check(SHOP, 'shop/frontend', 'svc/shop/nope', '--port', '80');
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /no Service shop\/nope in the input \(did you mean shop\/api\[Service\]\?\)/,
    );
  });
  it('is suggested when a name no pod or workload has is a Service', async (t) => {
    const dir = await tempDir(t, 'palisade-services-');
    const file = join(dir, 'service.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: Service\nmetadata: {name: api-svc, namespace: shop}\nspec: {selector: {app: api}, ports: [{port: 80, targetPort: http}]}\n',
    );
    for (const to of ['shop/api-svc', 'api-svc']) {
      const r = await check([...SHOP, '-f', file], 'shop/frontend', to, '--port', '80');
      assert.equal(r.code, 2);
      assert.match(r.stderr, /did you mean the Service shop\/api-svc\[Service\]\?/, to);
    }
  });
  it('makes a matrix row of a Service', async () => {
    const r = await cli([
      'matrix',
      ...SHOP,
      '--by',
      'service',
      '--port',
      '8000',
      '-n',
      'shop',
      '--addresses',
      'none',
    ]);
    assert.match(r.stdout, /^shop\/api\[Service\] +X {2}X {2}X {2}1$/m);
    assert.match(r.stdout, /^shop\/frontend\[Deployment\] +\. {2}X {2}X {2}3$/m);
  });
  it('lints a Service that selects nothing and a targetPort no backend declares, located', async (t) => {
    const dir = await tempDir(t, 'palisade-services-');
    const file = join(dir, 'services.yaml');
    await writeFile(
      file,
      [
        'apiVersion: v1\nkind: Service\nmetadata: {name: empty, namespace: shop}\nspec: {selector: {app: nothing}, ports: [{port: 80}]}',
        'apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {selector: {app: frontend}, ports: [{port: 80, targetPort: web}]}',
      ].join('\n---\n'),
    );
    const r = await cli(['lint', ...SHOP, '-f', file]);
    assert.match(
      r.stdout + r.stderr,
      new RegExp(
        `${file}:4:\\d+: warning SERVICE_SELECTS_NOTHING: shop/empty\\[Service\\] selects no pod or workload`,
      ),
    );
    assert.match(
      r.stdout + r.stderr,
      new RegExp(
        `${file}:9:\\d+: warning SERVICE_TARGET_PORT_MISSING: shop/web\\[Service\\] port 80/TCP targets "web"`,
      ),
    );
  });
});

describe('a pod to itself', () => {
  it('is allowed, and check says why', async () => {
    const r = await check(SHOP, 'shop/frontend', 'shop/frontend', '--port', 'http', '--expect', 'allow');
    assert.equal(r.code, 0, r.stdout);
    assert.match(
      r.stdout,
      /ALLOWED \(a pod to itself\)\n {2}a connection from a pod to its own address never leaves/,
    );
  });
  it('without --port: every port, and said why', async () => {
    const r = await check(SHOP, 'shop/db', 'shop/db');
    assert.equal(r.stdout, 'shop/db → shop/db: all (a pod to itself)\n');
    const json = JSON.parse((await check(SHOP, 'shop/db', 'shop/db', '-o', 'json')).stdout) as {
      self?: boolean;
    };
    assert.equal(json.self, true);
    const other = JSON.parse((await check(SHOP, 'shop/db', 'shop/api', '-o', 'json')).stdout) as {
      self?: boolean;
    };
    assert.equal(other.self, undefined);
  });
});
