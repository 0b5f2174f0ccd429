/**
 * `palisade serve` on the shop with Calico's security tier (examples/engines/calico.yaml): the
 * API answers with the tier, as `check` does, and the matrix has the connection the tier denies.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveCopy, type Served } from './helpers.ts';
import { policyObjects } from '../../web/src/policy-object.ts';

describe('palisade serve: Calico and Cilium policy', () => {
  let served: Served;
  let input = '';
  const get = async <T>(path: string): Promise<T> => {
    const response = await fetch(new URL(path, served.server.url));
    assert.equal(response.status, 200, `${path}: ${response.status}`);
    return (await response.json()) as T;
  };
  before(async () => {
    input = mkdtempSync(join(tmpdir(), `palisade-serve-engines-${process.pid}-`));
    cpSync('examples/shop', input, { recursive: true });
    cpSync('examples/engines/calico.yaml', join(input, 'calico.yaml'));
    cpSync('examples/engines/cilium.yaml', join(input, 'cilium.yaml'));
    cpSync('examples/ingress/app.yaml', join(input, 'ingress.yaml'));
    writeFileSync(
      join(input, 'antrea.yaml'),
      'apiVersion: crd.antrea.io/v1beta1\nkind: NetworkPolicy\nmetadata: {name: lockdown, namespace: shop}\nspec: {appliedTo: [{podSelector: {}}]}\n',
    );
    writeFileSync(
      join(input, 'more-engines.yaml'),
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: api-in, namespace: shop}
spec:
  selector: app == 'api'
  ingress: [{action: Allow}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db-in, namespace: shop}
specs:
  - endpointSelector: {matchLabels: {app: db}}
    ingress: [{fromEndpoints: [{matchLabels: {app: api}}]}]
  - endpointSelector: {matchLabels: {app: api}}
    ingress: [{}]
---
apiVersion: v1
kind: Namespace
metadata: {name: gnp}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: only-np, namespace: gnp}
spec: {podSelector: {}}
`,
    );
    served = await serveCopy(input);
  });
  after(async () => {
    await served.close();
    rmSync(input, { recursive: true, force: true });
  });

  it("the summary names each ordered kind by what it is, namespaced Calico's and Cilium's apart", async () => {
    const summary = await get<{ policyKinds: string[] }>('/api/summary');
    assert.deepEqual(summary.policyKinds, [
      '1 Calico NetworkPolicy',
      '1 Calico GlobalNetworkPolicy',
      '1 CiliumNetworkPolicy',
      '1 CiliumClusterwideNetworkPolicy',
    ]);
  });
  it('check names the tier that denied', async () => {
    const answer = await get<{ verdict: { allowed: boolean }; text: string }>(
      '/api/check?from=monitoring/prometheus&to=payments/gateway&port=9090',
    );
    assert.equal(answer.verdict.allowed, false);
    assert.match(
      answer.text,
      /denied by gnp\/security\.payments-lockdown ingress\[0\] \(tier security, order 10\)/,
    );
  });
  it('the matrix has the connection the tier denies, and the one it passes on', async () => {
    const matrix = await get<{ results: { from: string; to: string; allowed: boolean }[] }>(
      '/api/matrix?port=9090&by=workload',
    );
    const cell = (from: string, to: string) =>
      matrix.results.find((r) => r.from === from && r.to === to)?.allowed;
    assert.equal(cell('monitoring/prometheus', 'payments/gateway'), false);
    assert.equal(cell('monitoring/prometheus', 'shop/api'), true);
  });
  it("the page's links from a policy's short name find its object (web/src/policy-object.ts)", async () => {
    for (const [label, file] of [
      ['gnp/security.payments-lockdown', 'calico.yaml'],
      ['ccnp/no-metadata', 'cilium.yaml'],
      ['calico/shop/api-in', 'more-engines.yaml'],
      ['cilium/shop/db-in[1]', 'more-engines.yaml'],
    ] as const) {
      const found = await get<{ object: string; file: string }>(
        `/api/object?name=${encodeURIComponent(policyObjects(label)[0] ?? '')}`,
      );
      assert.match(found.file, new RegExp(`${file.replace('.', '\\.')}$`), label);
    }
    assert.deepEqual(
      policyObjects('cilium/x'),
      ['NetworkPolicy cilium/x'],
      'a NetworkPolicy in a namespace "cilium"',
    );
    // A NetworkPolicy in a namespace called gnp is named as a GlobalNetworkPolicy would be: the
    // page asks for the GlobalNetworkPolicy first, then for the NetworkPolicy.
    const [first, second] = policyObjects('gnp/only-np');
    assert.equal(first, 'GlobalNetworkPolicy.projectcalico.org only-np');
    assert.equal(
      (await fetch(new URL(`/api/object?name=${encodeURIComponent(first ?? '')}`, served.server.url))).status,
      404,
    );
    const found = await get<{ object: string; file: string }>(
      `/api/object?name=${encodeURIComponent(second ?? '')}`,
    );
    assert.match(found.file, /more-engines\.yaml$/);
  });
  it('the matrix says what matrix -o json says beside its pairs, and the same again', async () => {
    type Answer = {
      results: unknown[];
      addresses?: { from: string; to: string }[];
      ingressController?: { from: string; to: string; allowed: boolean }[];
      notEvaluated?: string[];
    };
    const path = '/api/matrix?port=8080&by=workload';
    const first = await fetch(new URL(path, served.server.url));
    const body = await first.text();
    const answer = JSON.parse(body) as Answer;
    assert.deepEqual(answer.notEvaluated, ['NetworkPolicy.crd.antrea.io shop/lockdown']);
    assert.ok(
      answer.addresses?.some((a) => a.to === 'shop/frontend'),
      'the address ranges',
    );
    assert.ok(
      answer.ingressController?.some((a) => a.to === 'web/storefront' && a.allowed),
      'the ingress controller reaches the storefront',
    );
    assert.equal(first.headers.get('cache-status'), 'palisade; fwd=miss');
    // The same question on the same input: the answer kept for this input version.
    const again = await fetch(new URL(path, served.server.url));
    assert.equal(again.headers.get('cache-status'), 'palisade; hit');
    assert.equal(await again.text(), body);
  });
});
