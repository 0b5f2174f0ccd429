/**
 * How check and explain name the places a Calico or Cilium answer walks through, on inputs a user
 * would write: a Pass in Calico's default tier goes past every tier (the policies that selected
 * the pod are named, never "no policy selects it"); Cilium's policies are no tier of Calico's;
 * with Calico's policies in the input, NetworkPolicy's place is Calico's default tier; profiles
 * have no order; the classifier refuses what it cannot express instead of naming another pod.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const PODS = `apiVersion: v1
kind: Namespace
metadata: {name: mix}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: mix, labels: {app: web}}
spec: {containers: [{name: c, image: x, ports: [{containerPort: 80}]}]}
status: {podIP: 10.0.0.2}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: mix, labels: {app: client}}
spec: {containers: [{name: c, image: x}]}
status: {podIP: 10.0.0.3}
`;

/** The pods above and these policies, in a file of the test's own. */
async function input(t: TestContext, policies: string): Promise<string[]> {
  const dir = await tempDir(t, 'palisade-walks-');
  const file = join(dir, 'input.yaml');
  await writeFile(file, `${PODS}---\n${policies}`);
  return ['-f', file];
}

const check = (input: readonly string[], ...rest: string[]) =>
  cli(['check', ...input, '--from', 'mix/client', '--to', 'mix/web', '--port', '80', ...rest]);

describe('a Calico Pass in the default tier', () => {
  const PASS = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: pass-all}
spec:
  order: 10
  selector: app == 'web'
  types: [Ingress]
  ingress: [{action: Pass, source: {selector: app == 'client'}}]
`;
  it('goes past every tier, and the answer names the policy that selected the pod', async (t) => {
    const files = await input(t, PASS);
    const text = await check(files, '--expect', 'allow');
    assert.equal(text.code, 0, text.stdout + text.stderr);
    assert.match(
      text.stdout,
      /ingress allow {2}tier default passes it on, and no tier after it decides, so it is allowed\n/,
    );
    assert.match(
      text.stdout,
      /\[default\] pass \(gnp\/pass-all, order 10, ingress\[0\]\) → allowed \(no tier decided\)\n/,
    );
    const json = JSON.parse((await check(files, '-o', 'json')).stdout) as {
      verdict: { ingress: { policies: string[]; walk: { tier: string; shownAs?: string }[] } };
    };
    assert.deepEqual(json.verdict.ingress.policies, ['gnp/pass-all']);
    assert.deepEqual(
      json.verdict.ingress.walk.map((step) => step.shownAs ?? step.tier),
      ['default', 'no tier decided'],
    );
  });
});

describe('Cilium policy alone', () => {
  const CILIUM = `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: web-ingress, namespace: mix}
spec:
  endpointSelector: {matchLabels: {app: web}}
  ingress:
  - fromEndpoints: [{matchLabels: {app: client}}]
    toPorts: [{ports: [{port: "8080", protocol: TCP}]}]
`;
  it("is named Cilium's, and its end is Cilium's default deny, not a tier's", async (t) => {
    const files = await input(t, CILIUM);
    const denied = await check(files, '--expect', 'deny');
    assert.equal(denied.code, 0, denied.stdout + denied.stderr);
    assert.match(denied.stdout, /\[Cilium\] denied \(default deny: cilium\/mix\/web-ingress\)\n/);
    assert.doesNotMatch(denied.stdout, /tier/);
    const explained = await cli(['explain', ...files, '--pod', 'mix/web']);
    assert.match(
      explained.stdout,
      /ingress: isolated by cilium\/mix\/web-ingress \(Cilium's default deny\): what no rule allows is denied\n {4}Cilium:\n/,
    );
    assert.doesNotMatch(explained.stdout, /default tier/);
  });
  it('is refused by the compiled classifier with a usage error naming the policy, not a pod', async (t) => {
    const files = await input(t, CILIUM);
    const r = await check(files, '--engine', 'compiled');
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr,
      "palisade: --engine compiled: the compiled classifier cannot express Calico's or Cilium's policies (the input has 1, e.g. CiliumNetworkPolicy mix/web-ingress); without --engine the reference evaluator answers\n",
    );
  });
});

describe("Calico's profiles and NetworkPolicy's place", () => {
  it("shows NetworkPolicy's place as Calico's default tier, and a profile without an order", async (t) => {
    const files = await input(
      t,
      `apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.mix}
spec:
  ingress: [{action: Allow}]
  egress: [{action: Deny}]
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: pass-client}
spec:
  order: 10
  selector: app == 'client'
  types: [Egress]
  egress: [{action: Pass}]
`,
    );
    const r = await check(files, '--expect', 'deny');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /\[default\] pass \(gnp\/pass-client, order 10, egress\[0\]\) → \[Profiles\] denied \(profile\/kns\.mix, egress\[0\]\)\n/,
    );
    assert.match(
      r.stdout,
      /\[default\] not isolated → \[Profiles\] allowed \(profile\/kns\.mix, ingress\[0\]\)\n/,
    );
    assert.doesNotMatch(r.stdout, /NetworkPolicy|order 0/);
  });
});
