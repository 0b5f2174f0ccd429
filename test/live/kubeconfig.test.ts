/**
 * kubectl's rules for finding the cluster: --kubeconfig alone; KUBECONFIG's files merged (missing
 * files skipped, first definition of a name wins, first current-context wins); ~/.kube/config;
 * the pod's service account when nothing else defines a cluster; --context over the current one.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { resolveKubeconfig, kubeconfigAvailable, KubeApiError } from '../../src/kube/index.ts';
import { tempDir, writeKubeconfig } from '../fake-apiserver/fixtures.ts';

const temp = tempDir('kubeconfig');
after(() => temp.cleanup());

const a = writeKubeconfig(temp.dir, 'a', { server: 'http://127.0.0.1:1001', context: 'alpha', token: 'ta' });
// b also defines "alpha" (its own server) and a current context "beta": a's win.
const bPath = join(temp.dir, 'b');
writeFileSync(
  bPath,
  [
    'apiVersion: v1',
    'kind: Config',
    'current-context: beta',
    'clusters:',
    '- name: alpha-cluster',
    '  cluster: { server: "http://127.0.0.1:2001" }',
    '- name: beta-cluster',
    '  cluster: { server: "http://127.0.0.1:2002" }',
    'users:',
    '- name: beta-user',
    '  user: { token: tb }',
    'contexts:',
    '- name: alpha',
    '  context: { cluster: beta-cluster, user: beta-user }',
    '- name: beta',
    '  context: { cluster: beta-cluster, user: beta-user, namespace: team-b }',
    '',
  ].join('\n'),
);

describe('kubeconfig resolution', () => {
  it('--kubeconfig reads that file only', async () => {
    const { target } = await resolveKubeconfig({ kubeconfig: bPath, env: { KUBECONFIG: a } });
    assert.deepEqual(target, {
      server: 'http://127.0.0.1:2002',
      context: 'beta',
      namespace: 'team-b',
      source: bPath,
    });
  });

  it('KUBECONFIG: files merged, the first to define a name or a current context wins, missing files skipped', async () => {
    const env = { KUBECONFIG: [join(temp.dir, 'missing'), a, bPath].join(delimiter) };
    const current = await resolveKubeconfig({ env });
    assert.equal(current.target.context, 'alpha');
    assert.equal(current.target.server, 'http://127.0.0.1:1001');
    assert.equal(current.target.namespace, 'default');
    const beta = await resolveKubeconfig({ env, context: 'beta' });
    assert.equal(beta.target.server, 'http://127.0.0.1:2002');
    assert.equal(beta.target.namespace, 'team-b');
    // The reverse order: b's current context and b's definition of "alpha" win.
    const reversed = await resolveKubeconfig({
      env: { KUBECONFIG: [bPath, a].join(delimiter) },
      context: 'alpha',
    });
    assert.equal(reversed.target.server, 'http://127.0.0.1:2002');
  });

  it('~/.kube/config when KUBECONFIG is unset', async () => {
    const home = join(temp.dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeKubeconfig(join(home, '.kube'), 'config', { server: 'http://127.0.0.1:3003', context: 'home' });
    const { target } = await resolveKubeconfig({ env: { HOME: home } });
    assert.equal(target.server, 'http://127.0.0.1:3003');
    assert.ok(kubeconfigAvailable({ env: { HOME: home } }));
  });

  it("in a pod: the service account's token, CA and namespace", async () => {
    const root = join(temp.dir, 'serviceaccount');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'token'), 'sa-token');
    writeFileSync(join(root, 'namespace'), 'palisade-system\n');
    writeFileSync(join(root, 'ca.crt'), '');
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
    assert.ok(kubeconfigAvailable({ env, serviceAccountRoot: root }));
    const { target, config } = await resolveKubeconfig({ env, serviceAccountRoot: root });
    assert.deepEqual(target, {
      server: 'https://10.96.0.1:443',
      context: 'in-cluster',
      namespace: 'palisade-system',
      source: `the service account in ${root}`,
    });
    const options: { headers?: Record<string, string> } = {};
    await config.applyToHTTPSOptions(options);
    assert.equal(options.headers?.Authorization, 'Bearer sa-token');
  });

  it('nothing configured anywhere, an unknown context, no current context: a config error each', async () => {
    assert.equal(kubeconfigAvailable({ env: {} }), false);
    await assert.rejects(
      resolveKubeconfig({ env: {} }),
      (e: unknown) => e instanceof KubeApiError && e.kind === 'config',
    );
    await assert.rejects(
      resolveKubeconfig({ kubeconfig: a, env: {}, context: 'gamma' }),
      /context "gamma" is not in .* \(contexts: alpha\)/,
    );
    const none = join(temp.dir, 'no-current');
    writeFileSync(
      none,
      'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts:\n- name: x\n  context: { cluster: y, user: z }\n',
    );
    await assert.rejects(
      resolveKubeconfig({ kubeconfig: none, env: {} }),
      /sets no current-context; give --context \(one of: x\)/,
    );
  });
});
