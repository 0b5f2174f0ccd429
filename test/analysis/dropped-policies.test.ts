/**
 * Issue 19 §1.5: `check` and `explain` name a NetworkPolicy that was dropped as invalid when it
 * would have selected the endpoint they answer for — next to the verdict, with where and why —
 * and say nothing of dropped policies that would not have applied.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';

const dir = mkdtempSync(join(tmpdir(), `palisade-dropped-${process.pid}-`));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const PODS = file(
  'pods.yaml',
  `apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: app, labels: {app: web}}
spec: {containers: [{name: c}]}
status: {phase: Running, podIP: 10.0.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: app, labels: {app: db}}
spec: {containers: [{name: c}]}
status: {phase: Running, podIP: 10.0.0.2}
`,
);

const policy = (name: string, namespace: string, spec: string): string =>
  `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}\n---\n`;

/** A GlobalNetworkPolicy dropped as invalid (a net that is no CIDR) that selects app=db. */
const INVALID_DENY_DB = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-db}
spec:
  selector: app == 'db'
  ingress: [{action: Deny, source: {nets: [10.0.0.300/24]}}]
`;

/** `check` of one connection over PODS and the given files. */
const checkWith = (files: readonly string[], from: string, to: string, port = '80') =>
  cli(['check', '-f', PODS, ...files, '--from', from, '--to', to, '--port', port]);

const DROPPED = file(
  'dropped.yaml',
  policy(
    'db-ingress',
    'app',
    `  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{ipBlock: {cidr: 10.0.0.0/33}}]`,
  ) +
    policy(
      'web-egress',
      'app',
      `  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  egress:
  - ports: [{port: 0x50}]`,
    ) +
    policy(
      'elsewhere',
      'other',
      `  podSelector: {}
  ingress:
  - from: [{ipBlock: {cidr: nonsense}}]`,
    ) +
    policy(
      'not-db',
      'app',
      `  podSelector: {matchLabels: {app: cache}}
  ingress:
  - ports: [{port: 99999}]`,
    ) +
    policy(
      'bad-selector',
      'app',
      `  podSelector: {matchExpressions: [{key: app, operator: Sometimes}]}
  ingress: []`,
    ),
);

const check = (...extra: string[]) =>
  cli(['check', '-f', PODS, DROPPED, '--from', 'app/web', '--to', 'app/db', '--port', '5432', ...extra]);

describe('policies dropped as invalid', () => {
  it('check names those that would have selected either side, next to the verdict', async () => {
    const r = await check();
    assert.equal(r.code, 1, 'the input has errors');
    const lines = r.stdout.split('\n');
    assert.match(lines[0] ?? '', /^app\/web → app\/db TCP\/5432: ALLOWED$/);
    const warnings = lines.filter((l) => l.startsWith('  warning: '));
    assert.equal(warnings.length, 3, r.stdout);
    assert.match(
      warnings.join('\n'),
      /app\/web-egress \(.*dropped\.yaml:\d+:\d+\) was dropped as invalid — spec\.egress\[0\]\.ports\[0\]\.port: .* — and would have selected app\/web for egress/,
    );
    assert.match(warnings.join('\n'), /app\/db-ingress .* would have selected app\/db for ingress/);
    assert.match(
      warnings.join('\n'),
      /app\/bad-selector .* might have selected \(its selector is invalid too\) app\/db for ingress/,
    );
    // The warnings come right after the verdict line, before the sides' explanation.
    assert.ok(lines[1]?.startsWith('  warning: '));
    assert.doesNotMatch(r.stdout, /elsewhere|not-db/);
  });

  it('check -o json lists them as data', async () => {
    const r = await check('-o', 'json');
    const json = JSON.parse(r.stdout) as {
      droppedPolicies: { policy: string; direction: string; certain: boolean }[];
    };
    assert.deepEqual(json.droppedPolicies.map((d) => `${d.policy} ${d.direction} ${d.certain}`).sort(), [
      'app/bad-selector ingress false',
      'app/db-ingress ingress true',
      'app/web-egress egress true',
    ]);
  });

  it('a valid definition of the same policy later in the input replaces the dropped one', async () => {
    const fixed = file(
      'fixed.yaml',
      policy(
        'db-ingress',
        'app',
        `  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{ipBlock: {cidr: 10.0.0.0/32}}]`,
      ),
    );
    const r = await cli([
      'check',
      '-f',
      PODS,
      DROPPED,
      fixed,
      '--from',
      'app/web',
      '--to',
      'app/db',
      '--port',
      '5432',
    ]);
    assert.doesNotMatch(r.stdout, /db-ingress \(/);
    assert.match(r.stdout, /DENIED/);
  });

  it('nothing is said when no dropped policy concerns the pair', async () => {
    const r = await cli(['check', '-f', PODS, '--from', 'app/web', '--to', 'app/db', '--port', '5432']);
    assert.equal(r.code, 0);
    assert.doesNotMatch(r.stdout, /warning|dropped/);
    const json = JSON.parse(
      (
        await cli([
          'check',
          '-f',
          PODS,
          '--from',
          'app/web',
          '--to',
          'app/db',
          '--port',
          '5432',
          '-o',
          'json',
        ])
      ).stdout,
    ) as Record<string, unknown>;
    assert.equal(json.droppedPolicies, undefined);
  });

  it('explain names them under the direction they would have isolated', async () => {
    const r = await cli(['explain', '-f', PODS, DROPPED, '--pod', 'app/db']);
    const ingress = r.stdout.split('\n  egress:')[0] ?? '';
    assert.match(ingress, /warning: app\/db-ingress .* would have selected app\/db for ingress/);
    assert.doesNotMatch(r.stdout.split('\n  egress:')[1] ?? '', /warning/);
    const web = await cli(['explain', '-f', PODS, DROPPED, '--pod', 'app/web', '-o', 'json']);
    const {
      endpoints: [explained],
    } = JSON.parse(web.stdout) as { endpoints: { egress: { dropped?: { policy: string }[] } }[] };
    assert.deepEqual(
      explained?.egress.dropped?.map((d) => d.policy),
      ['app/web-egress'],
    );
  });

  it("Calico's and Cilium's are named as the answer names them, by their own selector and directions", async () => {
    const engines = file(
      'engines.yaml',
      `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db-egress, namespace: app}
spec:
  endpointSelector: {matchLabels: {app: db}}
  egress:
    - toCIDRSet: [{cidr: 192.0.2.0/24, except: [192.0.3.0/25]}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web-egress, namespace: app}
spec:
  selector: app == 'web'
  egress: [{action: Allow, destination: {nets: [10.0.0.300/24]}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: other-egress, namespace: app}
spec:
  selector: app == 'other'
  egress: [{action: Allow, destination: {nets: [10.0.0.300/24]}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: either-egress, namespace: app}
spec:
  selector: app == 'web' || app == 'other'
  egress: [{action: Allow, destination: {nets: [10.0.0.300/24]}}]
`,
    );
    // An except outside its cidr: Cilium refuses the whole policy.
    const db = await cli([
      'check',
      '-f',
      PODS,
      engines,
      '--from',
      'app/db',
      '--to',
      '192.0.2.5',
      '--port',
      '443',
    ]);
    assert.match(
      db.stderr,
      /error EXCEPT_NOT_IN_CIDR: except "192\.0\.3\.0\/25" is not inside cidr "192\.0\.2\.0\/24"/,
    );
    assert.match(
      db.stdout,
      /warning: cilium\/app\/db-egress \(.*engines\.yaml:7:\d+\) was dropped as invalid .* would have selected app\/db for egress/,
    );
    // Calico's selector is read: web-egress selects app/web, other-egress does not.
    const web = await cli([
      'check',
      '-f',
      PODS,
      engines,
      '--from',
      'app/web',
      '--to',
      '192.0.2.5',
      '--port',
      '443',
    ]);
    assert.match(web.stdout, /warning: calico\/app\/web-egress .* would have selected app\/web for egress/);
    assert.doesNotMatch(web.stdout, /other-egress/);
    // Alternatives (`||`) on pod labels are read too: either-egress selects app/web, not app/db.
    assert.match(
      web.stdout,
      /warning: calico\/app\/either-egress .* would have selected app\/web for egress/,
    );
    assert.doesNotMatch(db.stdout, /either-egress/);
    // Without types, egress rules alone make it an egress policy (Calico's default), not ingress.
    const into = await cli([
      'check',
      '-f',
      PODS,
      engines,
      '--from',
      'app/db',
      '--to',
      'app/web',
      '--port',
      '80',
    ]);
    assert.doesNotMatch(into.stdout, /web-egress/);
  });

  it("a Cilium policy of several specs is read in each, and named by the object's name", async () => {
    const specs = file(
      'specs.yaml',
      `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db-specs, namespace: app}
specs:
  - endpointSelector: {matchLabels: {app: db}}
    egress: [{toCIDRSet: [{cidr: 192.0.2.0/24, except: [192.0.3.0/25]}]}]
  - endpointSelector: {matchLabels: {app: db}}
    ingress: [{fromEndpoints: [{matchLabels: {app: web}}]}]
`,
    );
    const out = await cli([
      'check',
      '-f',
      PODS,
      specs,
      '--from',
      'app/db',
      '--to',
      'app/web',
      '--port',
      '80',
    ]);
    assert.match(out.stdout, /warning: cilium\/app\/db-specs .* would have selected app\/db for egress/);
    const into = await cli([
      'check',
      '-f',
      PODS,
      specs,
      '--from',
      'app/web',
      '--to',
      'app/db',
      '--port',
      '80',
    ]);
    assert.match(into.stdout, /warning: cilium\/app\/db-specs .* would have selected app\/db for ingress/);
  });

  it('cluster-scoped ones (GlobalNetworkPolicy, clusterwide Cilium, AdminNetworkPolicy) are named by their subjects', async () => {
    const labelled = file(
      'labelled.yaml',
      `apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {team: a}}
`,
    );
    const clusterScoped = file(
      'cluster-scoped.yaml',
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-db}
spec:
  selector: app == 'db'
  namespaceSelector: team == 'a'
  ingress: [{action: Deny, source: {nets: [10.0.0.300/24]}}]
---
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: web-out}
spec:
  endpointSelector: {matchLabels: {app: web}}
  egress: [{toCIDRSet: [{cidr: 192.0.2.0/24, except: [192.0.3.0/25]}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 5000
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{action: Deny, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: bad-subject}
spec:
  priority: 5
  subject: {namespaces: {}, pods: {}}
  ingress: [{action: Deny, from: [{namespaces: {}}]}]
`,
    );
    const r = await checkWith([labelled, clusterScoped], 'app/web', 'app/db');
    assert.match(r.stderr, /cluster-scoped\.yaml:7:\d+: error CIDR_INVALID/);
    // The namespace selector is read: team a's db, for ingress.
    assert.match(
      r.stdout,
      /warning: gnp\/deny-db \(.*cluster-scoped\.yaml:7:\d+\) was dropped as invalid .* would have selected app\/db for ingress/,
    );
    assert.match(r.stdout, /warning: ccnp\/web-out .* would have selected app\/web for egress/);
    // Its subject unreadable, an AdminNetworkPolicy might select any pod.
    assert.match(
      r.stdout,
      /warning: anp\/bad-subject .* might have selected \(its selector is invalid too\) app\/db for ingress/,
    );
    // Namespaces labelled team=b: none here.
    assert.doesNotMatch(r.stdout, /anp\/guard/);
    // explain says it beside the direction it concerns, and -o json names it as check does.
    const explained = await cli([
      'explain',
      '-f',
      PODS,
      labelled,
      clusterScoped,
      '--pod',
      'app/db',
      '-o',
      'json',
    ]);
    const [db] = (
      JSON.parse(explained.stdout) as {
        endpoints: { ingress: { dropped?: { policy: string; certain: boolean }[] } }[];
      }
    ).endpoints;
    assert.deepEqual(
      db?.ingress.dropped?.map((d) => [d.policy, d.certain]),
      [
        ['anp/bad-subject', false],
        ['gnp/deny-db', true],
      ],
    );
  });

  it('reads their subjects as the decoder does: host policies select no pod, a selector of the wrong type any', async () => {
    const subjects = file(
      'subjects.yaml',
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: host-guard}
spec:
  preDNAT: true
  applyOnForward: true
  selector: all()
  ingress: [{action: Deny, source: {nets: [10.0.0.300/24]}}]
---
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: nodes-out}
spec:
  nodeSelector: {}
  egress: [{toCIDRSet: [{cidr: 192.0.2.0/24, except: [192.0.3.0/25]}]}]
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: typed-wrong}
spec:
  selector: 42
  ingress: [{action: Deny, source: {nets: [10.0.0.300/24]}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: api-account, namespace: app}
spec:
  serviceAccountSelector: name == 'api'
  ingress: [{action: Deny, source: {nets: [10.0.0.300/24]}}]
`,
    );
    const into = await checkWith([subjects], 'app/web', 'app/db');
    assert.doesNotMatch(into.stdout, /warning: gnp\/host-guard/);
    assert.match(
      into.stdout,
      /warning: gnp\/typed-wrong .* might have selected \(its selector is invalid too\) app\/db/,
    );
    // Its service account selector is read: no pod here runs as "api".
    assert.doesNotMatch(into.stdout, /warning: calico\/app\/api-account/);
    const out = await checkWith([subjects], 'app/web', '192.0.2.4');
    assert.doesNotMatch(out.stdout, /warning: ccnp\/nodes-out/);
  });

  it('a valid cluster-scoped policy of the same name later in the input replaces the dropped one', async () => {
    const twice = file(
      'twice.yaml',
      `${INVALID_DENY_DB}---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-db}
spec:
  selector: app == 'db'
  ingress: [{action: Deny, source: {nets: [10.0.0.0/24]}}]
`,
    );
    const r = await checkWith([twice], 'app/web', 'app/db');
    assert.match(r.stdout, /DENIED/);
    assert.doesNotMatch(r.stdout, /dropped as invalid/);
    // A NetworkPolicy of that name in a namespace called "gnp" is another policy.
    const namesake = file('namesake.yaml', policy('deny-db', 'gnp', '  podSelector: {}') + INVALID_DENY_DB);
    const kept = await checkWith([namesake], 'app/web', 'app/db');
    assert.match(kept.stdout, /warning: gnp\/deny-db .* would have selected app\/db for ingress/);
  });
});
