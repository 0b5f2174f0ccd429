/**
 * Calico's own documented examples, each outcome asserted with the sentence it follows from and
 * the page it is on (docs.tigera.io/calico/latest/…; the pages' sources are in tigera/docs,
 * calico/…). The YAML is the documentation's, with pods added to try it on.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { directionLines } from '../../src/analysis/format/explain-text.ts';
import { PLAIN } from '../../src/analysis/format/style.ts';
import { expectConnection, explainOne, namespaceYaml, podYaml, yamlCluster } from '../helpers/engine-docs.ts';

const DOCS = 'https://docs.tigera.io/calico/latest';

describe(`${DOCS}/reference/resources/networkpolicy — "Sample YAML"`, () => {
  const { cluster } = yamlCluster(
    namespaceYaml('production'),
    podYaml('production', 'db', { role: 'database' }, '10.0.0.1'),
    podYaml('production', 'fe', { role: 'frontend' }, '10.0.0.2'),
    podYaml('production', 'other', { role: 'other' }, '10.0.0.3'),
    `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: allow-tcp-6379
  namespace: production
spec:
  selector: role == 'database'
  types:
    - Ingress
    - Egress
  ingress:
    - action: Allow
      metadata:
        annotations:
          from: frontend
          to: database
      protocol: TCP
      source:
        selector: role == 'frontend'
      destination:
        ports:
          - 6379
  egress:
    - action: Allow`,
  );
  const sentence =
    'This sample policy allows TCP traffic from frontend endpoints to port 6379 on database endpoints.';
  it('allows frontend → database on TCP 6379', () => {
    const verdict = expectConnection(cluster, 'production/fe', 'production/db', 6379, 'allowed', sentence);
    assert.match(verdict.ingress.reason, /allowed by calico\/production\/allow-tcp-6379 ingress\[0\]/);
  });
  it('denies what the tier does not allow (another port, another source)', () => {
    const denied =
      'If the Tier applies to the endpoint, but takes no action on the packet the packet is dropped. (reference/resources/tier)';
    expectConnection(cluster, 'production/fe', 'production/db', 80, 'denied', denied);
    expectConnection(cluster, 'production/other', 'production/db', 6379, 'denied', denied);
  });
  it("allows the database's egress anywhere (an Allow with no criteria)", () => {
    expectConnection(cluster, 'production/db', '192.0.2.1', 443, 'allowed', 'egress: - action: Allow');
  });
});

describe(`${DOCS}/network-policy/get-started/calico-policy/calico-network-policy`, () => {
  const pods = [
    namespaceYaml('production'),
    namespaceYaml('shapes', { shape: 'circle' }),
    podYaml('production', 'red', { color: 'red' }, '10.0.0.1'),
    podYaml('production', 'blue', { color: 'blue' }, '10.0.0.2'),
    podYaml('production', 'green', { color: 'green' }, '10.0.0.3'),
    podYaml('shapes', 'blue', { color: 'blue' }, '10.0.1.2'),
    podYaml('shapes', 'red', { color: 'red' }, '10.0.1.1'),
  ];
  it('"Control traffic to/from endpoints in a namespace"', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: allow-tcp-6379
  namespace: production
spec:
  selector: color == 'red'
  ingress:
    - action: Allow
      protocol: TCP
      source:
        selector: color == 'blue'
      destination:
        ports:
          - 6379`,
    );
    const sentence =
      'ingress traffic to endpoints in the namespace: production with label color: red is allowed, only if it comes from a pod in the same namespace with color: blue, on port 6379.';
    expectConnection(cluster, 'production/blue', 'production/red', 6379, 'allowed', sentence);
    expectConnection(cluster, 'production/blue', 'production/red', 6380, 'denied', sentence);
    expectConnection(cluster, 'production/green', 'production/red', 6379, 'denied', sentence);
    expectConnection(cluster, 'shapes/blue', 'production/red', 6379, 'denied', sentence);
  });
  it('"To allow ingress traffic from endpoints in other namespaces, use a namespaceSelector"', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: allow-tcp-6379
  namespace: production
spec:
  selector: color == 'red'
  ingress:
    - action: Allow
      protocol: TCP
      source:
        selector: color == 'blue'
        namespaceSelector: shape == 'circle'
      destination:
        ports:
          - 6379`,
    );
    const sentence =
      'In the following example, ingress traffic is allowed from endpoints in namespaces that match shape == circle.';
    expectConnection(cluster, 'shapes/blue', 'production/red', 6379, 'allowed', sentence);
    expectConnection(cluster, 'shapes/red', 'production/red', 6379, 'denied', sentence);
  });
  it('"Control traffic to/from endpoints independent of namespace" (GlobalNetworkPolicy deny-blue)', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: deny-blue
spec:
  selector: color == 'red'
  ingress:
    - action: Deny
      protocol: TCP
      source:
        selector: color == 'blue'`,
    );
    const sentence =
      'incoming TCP traffic to any pods with label color: red is denied if it comes from a pod with color: blue.';
    const verdict = expectConnection(cluster, 'shapes/blue', 'production/red', 80, 'denied', sentence);
    assert.match(verdict.ingress.reason, /denied by gnp\/deny-blue ingress\[0\]/);
    expectConnection(cluster, 'production/blue', 'shapes/red', 6379, 'denied', sentence);
    // What the Deny does not match, the end of the default tier denies: the policy selects red pods.
    expectConnection(
      cluster,
      'production/blue',
      'production/red',
      53,
      'denied',
      'If the Tier applies to the endpoint, but takes no action on the packet the packet is dropped. (reference/resources/tier)',
      'UDP',
    );
  });
  it('"Control traffic to/from endpoints using IP addresses or CIDR ranges"', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: allow-egress-external
  namespace: production
spec:
  selector: color == 'red'
  types:
    - Egress
  egress:
    - action: Allow
      destination:
        nets:
          - 1.2.3.0/24`,
    );
    const sentence =
      'outgoing traffic is allowed from pods with the label color: red if it goes to an IP address in the 1.2.3.4/24 CIDR block.';
    expectConnection(cluster, 'production/red', '1.2.3.4', 443, 'allowed', sentence);
    expectConnection(cluster, 'production/red', '1.2.4.4', 443, 'denied', sentence);
    expectConnection(cluster, 'production/red', 'production/blue', 443, 'denied', sentence);
  });
  it('"Apply network policies in specific order": order 10 before order 20', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: drop-other-ingress
spec:
  order: 20
  selector: color == 'red'
  ingress:
    - action: Deny`,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: allow-cluster-internal-ingress
spec:
  order: 10
  selector: color == 'red'
  ingress:
    - action: Allow
      source:
        nets: [10.0.0.0/8]`,
    );
    const sentence =
      'the policy allow-cluster-internal-ingress (order: 10) will be applied before the policy drop-other-ingress (order: 20).';
    const verdict = expectConnection(cluster, 'production/blue', 'production/red', 80, 'allowed', sentence);
    assert.match(
      verdict.ingress.reason,
      /gnp\/allow-cluster-internal-ingress ingress\[0\] \(default tier, order 10\)/,
    );
    expectConnection(cluster, '192.0.2.1', 'production/red', 80, 'denied', sentence);
  });
  it('"Generate logs for specific traffic": Log goes on to the next rule', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('production'),
      podYaml('production', 'db', { role: 'database' }, '10.0.0.1'),
      podYaml('production', 'fe', { role: 'frontend' }, '10.0.0.2'),
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: allow-tcp-6379
  namespace: production
spec:
  selector: role == 'database'
  types:
    - Ingress
    - Egress
  ingress:
    - action: Log
      protocol: TCP
      source:
        selector: role == 'frontend'
    - action: Deny
      protocol: TCP
      source:
        selector: role == 'frontend'`,
    );
    const verdict = expectConnection(
      cluster,
      'production/fe',
      'production/db',
      6379,
      'denied',
      'incoming TCP traffic to an application is denied, and each connection attempt is logged to syslog.',
    );
    assert.match(verdict.ingress.reason, /ingress\[1\]/, 'the Deny rule decides, not the Log before it');
  });
});

describe(`${DOCS}/network-policy/get-started/kubernetes-default-deny`, () => {
  const pods = [
    namespaceYaml('engineering'),
    namespaceYaml('kube-system'),
    namespaceYaml('shop'),
    podYaml('engineering', 'a', { app: 'a' }, '10.0.0.1'),
    podYaml('engineering', 'b', { app: 'b' }, '10.0.0.2'),
    podYaml('shop', 'web', { app: 'web' }, '10.0.1.1'),
    podYaml('shop', 'api', { app: 'api' }, '10.0.1.2'),
    podYaml('kube-system', 'dns', { 'k8s-app': 'kube-dns' }, '10.0.2.1'),
    podYaml('kube-system', 'metrics', { app: 'metrics' }, '10.0.2.2'),
  ];
  it('a default deny NetworkPolicy for all workloads in the namespace engineering', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: default-deny
  namespace: engineering
spec:
  selector: all()
  types:
    - Ingress
    - Egress`,
    );
    const sentence =
      'A default deny network policy provides an enhanced security posture so pods without policy (or incorrect policy) are not allowed traffic';
    expectConnection(cluster, 'engineering/a', 'engineering/b', 80, 'denied', sentence);
    expectConnection(cluster, 'shop/web', 'engineering/a', 80, 'denied', sentence);
    expectConnection(
      cluster,
      'shop/web',
      'shop/api',
      80,
      'allowed',
      'If no network policies apply to a pod, then all traffic to/from that pod is allowed.',
    );
  });
  it('a global default deny for non-system pods (deny-app-policy), which still allows DNS', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: deny-app-policy
spec:
  namespaceSelector: kubernetes.io/metadata.name not in {"calico-system", "kube-public", "kube-system", "tigera-operator"}
  types:
  - Ingress
  - Egress
  egress:
   # allow all namespaces to communicate to DNS pods
  - action: Allow
    protocol: UDP
    destination:
      selector: 'k8s-app == "kube-dns"'
      ports:
      - 53
  - action: Allow
    protocol: TCP
    destination:
      selector: 'k8s-app == "kube-dns"'
      ports:
      - 53`,
      `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-to-api, namespace: shop}
spec:
  podSelector: {matchLabels: {app: api}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}]}]`,
      `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-egress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  egress: [{to: [{podSelector: {matchLabels: {app: api}}}]}]`,
    );
    const dns = 'allow all namespaces to communicate to DNS pods';
    expectConnection(cluster, 'shop/web', 'kube-system/dns', 53, 'allowed', dns, 'UDP');
    expectConnection(cluster, 'engineering/a', 'kube-system/dns', 53, 'allowed', dns, 'TCP');
    const denied =
      'By selecting the traffic with the namespaceSelector but not specifying an allow, the traffic is denied after all other policy is evaluated.';
    expectConnection(cluster, 'engineering/a', 'engineering/b', 80, 'denied', denied);
    expectConnection(cluster, 'shop/web', 'kube-system/metrics', 443, 'denied', denied);
    const order =
      'This design also makes it unnecessary to ensure any specific order (priority) for the default-deny policy.';
    expectConnection(cluster, 'shop/web', 'shop/api', 8080, 'allowed', order);
    expectConnection(
      cluster,
      'kube-system/metrics',
      'kube-system/dns',
      53,
      'allowed',
      'This policy uses a negative selector for the spec.namespaceselector field to exclude control plane namespaces.',
      'UDP',
    );
  });
});

describe(`${DOCS}/network-policy/policy-tiers/tiered-policy`, () => {
  const pods = [
    namespaceYaml('app'),
    podYaml('app', 'stage-a', { env: 'stage' }, '10.0.0.1'),
    podYaml('app', 'stage-b', { env: 'stage' }, '10.0.0.2'),
    podYaml('app', 'prod', { env: 'prod' }, '10.0.0.3'),
  ];
  const stageEnv = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: devops.stage-env
spec:
  tier: devops
  order: 255
  selector: env == "stage"
  ingress:
    - action: Deny
      source:
        selector: env != "stage"
    - action: Pass
  egress:
    - action: Deny
      destination:
        selector: env != "stage"
    - action: Pass
  types:
    - Ingress
    - Egress`;
  const devopsTier = `apiVersion: projectcalico.org/v3
kind: Tier
metadata:
  name: devops
spec:
  order: 300`;
  it('"Pass action rule example": deny, then pass on to the next tier', () => {
    const { cluster } = yamlCluster(...pods, devopsTier, stageEnv);
    const denies =
      'The policy denies ingress and egress traffic to workloads that match selector, env == "stage".';
    const verdict = expectConnection(cluster, 'app/prod', 'app/stage-a', 80, 'denied', denies);
    assert.match(
      verdict.ingress.reason,
      /denied by gnp\/devops\.stage-env ingress\[0\] \(tier devops, order 255\)/,
    );
    expectConnection(
      cluster,
      'app/stage-b',
      'app/stage-a',
      80,
      'allowed',
      'To ensure that policies continue to evaluate traffic after this policy, the policy adds a Pass action for both ingress and egress. … If the last Tier applying to the endpoint Passes the packet, that endpoint’s Profiles are evaluated. (reference/resources/tier)',
    );
  });
  it('"Implicit default deny": at the end of each tier', () => {
    const { cluster } = yamlCluster(
      ...pods,
      devopsTier,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: devops.only-stage
spec:
  tier: devops
  selector: env == "stage"
  ingress:
    - action: Allow
      source:
        selector: env == "stage"`,
      `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all, namespace: app}
spec:
  podSelector: {}
  ingress: [{}]`,
    );
    const sentence =
      'As shown in the following diagram, at the end of each tier is an implicit default deny. … you must either explicitly update tier’s default action to Pass or apply a Pass action rule when you want traffic evaluation to continue.';
    expectConnection(cluster, 'app/prod', 'app/stage-a', 80, 'denied', sentence);
    expectConnection(cluster, 'app/stage-b', 'app/stage-a', 80, 'allowed', sentence);
  });
  it('"Pass default action tier example": a tier whose default action is Pass', () => {
    const { cluster } = yamlCluster(
      ...pods,
      `apiVersion: projectcalico.org/v3
kind: Tier
metadata:
  name: devops
spec:
  order: 300
  defaultAction: Pass`,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: devops.deny-prod
spec:
  tier: devops
  selector: env == "stage"
  ingress:
    - action: Deny
      source:
        selector: env == "prod"`,
    );
    expectConnection(
      cluster,
      'app/stage-b',
      'app/stage-a',
      80,
      'allowed',
      'The other option, is to update tier’s default action to Pass to override the implicit default deny.',
    );
    expectConnection(cluster, 'app/prod', 'app/stage-a', 80, 'denied', 'action: Deny');
  });
  it('"Policy endpoint matching across tiers": a tier no policy of which applies is skipped', () => {
    const { cluster } = yamlCluster(
      ...pods,
      devopsTier,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: devops.stage-only
spec:
  tier: devops
  selector: env == "stage"
  ingress:
    - action: Allow
      source:
        selector: env == "stage"`,
    );
    expectConnection(
      cluster,
      'app/stage-a',
      'app/prod',
      80,
      'allowed',
      'if no policies within a tier apply to endpoints, the tier is skipped, and the tier’s implicit deny behavior is not executed.',
    );
  });
  it('"kube-admin tier": ClusterNetworkPolicy with tier Admin sits at order 1,000, after a Calico tier of order 300', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('default'),
      namespaceYaml('other'),
      podYaml('default', 'a', { app: 'a' }, '10.0.0.1'),
      podYaml('default', 'b', { app: 'b' }, '10.0.0.2'),
      podYaml('other', 'c', { app: 'c' }, '10.0.1.1'),
      `apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata:
  name: accept-default
spec:
  tier: Admin
  priority: 100
  subject:
    namespaces:
      matchLabels:
        kubernetes.io/metadata.name: default
  ingress:
  - name: accept-default-ingress
    action: "Accept"
    from:
    - namespaces:
        matchLabels:
          kubernetes.io/metadata.name: default`,
      `apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 300}`,
      `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: security.quarantine}
spec:
  tier: security
  selector: app == 'b'
  ingress:
    - action: Deny
      source: {selector: app == 'a'}
    - action: Pass`,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: deny-all, namespace: default}
spec:
  selector: all()
  types: [Ingress]`,
    );
    const accepted =
      'Calico enforces Kubernetes ClusterNetworkPolicy resources with spec.tier: Admin in the kube-admin tier. … It is automatically created at startup and has the order of 1,000';
    const verdict = expectConnection(cluster, 'default/b', 'default/a', 80, 'allowed', accepted);
    assert.match(verdict.ingress.reason, /allowed by Admin tier rule cnp\/accept-default/);
    expectConnection(
      cluster,
      'default/a',
      'default/b',
      80,
      'denied',
      'Tiers are sorted by their order - smallest number first. (reference/resources/tier; security has order 300)',
    );
    expectConnection(
      cluster,
      'other/c',
      'default/a',
      80,
      'denied',
      'selector: all() (the default tier holds deny-all)',
    );
  });
});

describe(`${DOCS}/reference/resources/networkpolicy — Kubernetes NetworkPolicy is Calico's knp.default.* at order 1000`, () => {
  const pods = [
    namespaceYaml('shop'),
    podYaml('shop', 'web', { app: 'web' }, '10.0.0.1'),
    podYaml('shop', 'api', { app: 'api' }, '10.0.0.2'),
    podYaml('shop', 'ops', { app: 'ops' }, '10.0.0.3'),
  ];
  const knp = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: api, namespace: shop}
spec:
  podSelector: {matchLabels: {app: api}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}]}]`;
  const sentence =
    '"We insert all the NetworkPolicy Policies at order 1000.0 after conversion." (libcalico-go, k8s/conversion/conversion.go) — Policies in each Tier are then processed in order (reference/resources/tier)';
  it('a default-tier Calico policy of a lower order decides before the Kubernetes one', () => {
    const { cluster } = yamlCluster(
      ...pods,
      knp,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: no-web, namespace: shop}
spec:
  order: 500
  selector: app == 'api'
  ingress: [{action: Deny, source: {selector: app == 'web'}}]`,
    );
    expectConnection(cluster, 'shop/web', 'shop/api', 80, 'denied', sentence);
  });
  it('one of a higher order is reached only where the Kubernetes one allows nothing', () => {
    const { cluster } = yamlCluster(
      ...pods,
      knp,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: ops-too, namespace: shop}
spec:
  order: 2000
  selector: app == 'api'
  ingress: [{action: Deny, source: {selector: app == 'web'}}, {action: Allow, source: {selector: app == 'ops'}}]`,
    );
    expectConnection(cluster, 'shop/web', 'shop/api', 80, 'allowed', sentence);
    expectConnection(cluster, 'shop/ops', 'shop/api', 80, 'allowed', sentence);
  });
});

describe(`${DOCS}/network-policy/policy-rules/service-accounts`, () => {
  const objects = [
    namespaceYaml('prod-engineering'),
    `apiVersion: v1
kind: ServiceAccount
metadata: {name: web-frontend-sa, namespace: prod-engineering, labels: {app: web-frontend}}`,
    `apiVersion: v1
kind: ServiceAccount
metadata: {name: intern-sa, namespace: prod-engineering, labels: {role: intern}}`,
    podYaml('prod-engineering', 'db', { app: 'db' }, '10.0.0.1'),
    podYaml('prod-engineering', 'api', { app: 'api' }, '10.0.0.2', { serviceAccount: 'api-service' }),
    podYaml('prod-engineering', 'auth', { app: 'auth' }, '10.0.0.3', { serviceAccount: 'user-auth-service' }),
    podYaml('prod-engineering', 'other', { app: 'other' }, '10.0.0.4'),
    podYaml('prod-engineering', 'web', { app: 'web' }, '10.0.0.5', { serviceAccount: 'web-frontend-sa' }),
    podYaml('prod-engineering', 'intern1', { app: 'i1' }, '10.0.0.6', { serviceAccount: 'intern-sa' }),
    podYaml('prod-engineering', 'intern2', { app: 'i2' }, '10.0.0.7', { serviceAccount: 'intern-sa' }),
  ];
  it('"Limit ingress traffic for workloads by service account name"', () => {
    const { cluster } = yamlCluster(
      ...objects,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: demo-calico
  namespace: prod-engineering
spec:
  ingress:
    - action: Allow
      source:
        serviceAccounts:
          names:
            - api-service
            - user-auth-service
  selector: 'app == "db"'`,
    );
    const sentence =
      'ingress traffic is allowed from any workload whose service account matches the names api-service or user-auth-service.';
    expectConnection(cluster, 'prod-engineering/api', 'prod-engineering/db', 5432, 'allowed', sentence);
    expectConnection(cluster, 'prod-engineering/auth', 'prod-engineering/db', 5432, 'allowed', sentence);
    expectConnection(
      cluster,
      'prod-engineering/other',
      'prod-engineering/db',
      5432,
      'denied',
      `${sentence} (If you do not explicitly assign a service account to a pod, it uses the default ServiceAccount in the namespace.)`,
    );
  });
  it('"Limit ingress traffic for workloads by service account label"', () => {
    const { cluster } = yamlCluster(
      ...objects,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: allow-web-frontend
  namespace: prod-engineering
spec:
  ingress:
    - action: Allow
      source:
        serviceAccounts:
          selector: 'app == "web-frontend"'
  selector: 'app == "db"'`,
    );
    const sentence =
      'ingress traffic is allowed from any workload whose service account matches the label selector, app == web-frontend.';
    expectConnection(cluster, 'prod-engineering/web', 'prod-engineering/db', 5432, 'allowed', sentence);
    expectConnection(cluster, 'prod-engineering/api', 'prod-engineering/db', 5432, 'denied', sentence);
  });
  it('"Use Kubernetes RBAC to control service account label assignment"', () => {
    const { cluster } = yamlCluster(
      ...objects,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: restrict-intern-access
  namespace: prod-engineering
spec:
  serviceAccountSelector: 'role == "intern"'
  ingress:
    - action: Allow
      source:
        serviceAccounts:
          selector: 'role == "intern"'
  egress:
    - action: Allow
      destination:
        serviceAccounts:
          selector: 'role == "intern"'`,
    );
    const sentence =
      'pods with an intern service account can communicate only with pods with service accounts labeled, role: intern.';
    expectConnection(
      cluster,
      'prod-engineering/intern1',
      'prod-engineering/intern2',
      80,
      'allowed',
      sentence,
    );
    expectConnection(cluster, 'prod-engineering/intern1', 'prod-engineering/db', 80, 'denied', sentence);
    expectConnection(cluster, 'prod-engineering/api', 'prod-engineering/intern1', 80, 'denied', sentence);
    expectConnection(cluster, 'prod-engineering/api', 'prod-engineering/db', 80, 'allowed', sentence);
  });
});

describe(`${DOCS}/network-policy/policy-rules/namespace-policy — "Use Kubernetes RBAC to control namespace label assignment"`, () => {
  const { cluster } = yamlCluster(
    namespaceYaml('dev', { environment: 'development' }),
    namespaceYaml('dev2', { environment: 'development' }),
    namespaceYaml('prod', { environment: 'production' }),
    podYaml('dev', 'a', { app: 'a' }, '10.0.0.1'),
    podYaml('dev2', 'b', { app: 'b' }, '10.0.0.2'),
    podYaml('prod', 'c', { app: 'c' }, '10.0.1.1'),
    `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: restrict-development-access
spec:
  namespaceSelector: 'environment == "development"'
  ingress:
    - action: Allow
      source:
        namespaceSelector: 'environment == "development"'
  egress:
    - action: Allow
      destination:
        namespaceSelector: 'environment == "development"'`,
  );
  const sentence =
    'users in the development environment can communicate only with pods that have a namespace labeled, environment == "development".';
  it('keeps development to development', () => {
    expectConnection(cluster, 'dev/a', 'dev2/b', 80, 'allowed', sentence);
    expectConnection(cluster, 'dev/a', 'prod/c', 80, 'denied', sentence);
    expectConnection(cluster, 'prod/c', 'dev/a', 80, 'denied', sentence);
  });
});

describe(`${DOCS}/reference/resources/networkpolicy — "EntityRule": selectors match endpoints, rules match packets`, () => {
  const pods = [
    namespaceYaml('ns'),
    podYaml('ns', 'target', { app: 'target' }, '10.0.0.1'),
    podYaml('ns', 'foo', { foo: 'x' }, '10.0.0.2'),
    podYaml('ns', 'plain', { app: 'plain' }, '10.0.0.3'),
  ];
  const policy = (source: string): string => `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: p}
spec:
  selector: app == 'target'
  ingress:
    - action: Allow
      source: ${source}`;
  it('"selector: !has(foo) matches packets from/to endpoints and network sets that do not have the label foo"', () => {
    const { cluster } = yamlCluster(...pods, policy(`{selector: "!has(foo)"}`));
    const sentence =
      'selector: !has(foo) matches packets from/to endpoints and network sets that do not have the label "foo".';
    expectConnection(cluster, 'ns/plain', 'ns/target', 80, 'allowed', sentence);
    expectConnection(cluster, 'ns/foo', 'ns/target', 80, 'denied', sentence);
    expectConnection(cluster, '192.0.2.1', 'ns/target', 80, 'denied', sentence);
  });
  it('"notSelector: has(foo) matches packets from/to anywhere (including outside the cluster), except … the label foo"', () => {
    const { cluster } = yamlCluster(...pods, policy(`{notSelector: "has(foo)"}`));
    const sentence =
      'notSelector: has(foo) matches packets from/to anywhere (including outside the cluster), except traffic from/to endpoints and network sets that have the label "foo".';
    expectConnection(cluster, 'ns/plain', 'ns/target', 80, 'allowed', sentence);
    expectConnection(cluster, '192.0.2.1', 'ns/target', 80, 'allowed', sentence);
    expectConnection(cluster, 'ns/foo', 'ns/target', 80, 'denied', sentence);
  });
  it('"A rule with a selector all() won’t match all packets … To match all packets, do not include a selector"', () => {
    const sentence =
      'A rule with a selector all() won’t match "all packets", it will match "packets from all in-scope endpoints and network sets". To match all packets, do not include a selector in the rule at all.';
    const withAll = yamlCluster(...pods, policy(`{selector: all()}`)).cluster;
    expectConnection(withAll, 'ns/foo', 'ns/target', 80, 'allowed', sentence);
    expectConnection(withAll, '192.0.2.1', 'ns/target', 80, 'denied', sentence);
    const without = yamlCluster(...pods, policy('{}')).cluster;
    expectConnection(without, '192.0.2.1', 'ns/target', 80, 'allowed', sentence);
  });
});

describe(`${DOCS}/reference/resources/networkpolicy — "Ports"`, () => {
  it("\"ports: [8080, '1234:5678', 'named-port']\"", () => {
    const { cluster } = yamlCluster(
      namespaceYaml('ns'),
      podYaml('ns', 'server', { app: 'server' }, '10.0.0.1', {
        ports: '[{name: named-port, containerPort: 9000}]',
      }),
      podYaml('ns', 'client', { app: 'client' }, '10.0.0.2'),
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: ports, namespace: ns}
spec:
  selector: app == 'server'
  ingress:
    - action: Allow
      protocol: TCP
      destination:
        ports: [8080, '1234:5678', 'named-port']`,
    );
    const sentence = "this would be a valid list of ports: ports: [8080, '1234:5678', 'named-port']";
    for (const port of [8080, 1234, 5000, 5678, 9000])
      expectConnection(cluster, 'ns/client', 'ns/server', port, 'allowed', sentence);
    for (const port of [8081, 1233, 5679])
      expectConnection(cluster, 'ns/client', 'ns/server', port, 'denied', sentence);
  });
});

describe('what the answers say decided, with tiers before the default one', () => {
  const { cluster } = yamlCluster(
    namespaceYaml('web'),
    namespaceYaml('ops', { team: 'ops' }),
    podYaml('web', 'api', { app: 'api' }, '10.0.0.1'),
    podYaml('web', 'frontend', { app: 'frontend' }, '10.0.0.2'),
    podYaml('ops', 'monitor', { app: 'monitor' }, '10.0.0.3'),
    podYaml('ops', 'batch', { app: 'batch' }, '10.0.0.4'),
    `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: api-ingress, namespace: web}
spec:
  podSelector: {matchLabels: {app: api}}
  ingress: [{from: [{podSelector: {matchLabels: {app: frontend}}}]}]`,
    `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: default-deny}
spec:
  order: 2000
  namespaceSelector: kubernetes.io/metadata.name == 'web'
  types: [Ingress, Egress]`,
    `apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100}`,
    `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: security.pass-all}
spec:
  tier: security
  order: 10
  selector: all()
  types: [Ingress]
  ingress: [{action: Pass}]`,
  );
  it('a side passed on by a tier and selected by no default-tier policy says so, not "no policy selects it"', () => {
    const sentence =
      'If the Pass action is used, the packet skips to the next tier. (reference/resources/globalnetworkpolicy)';
    const verdict = expectConnection(cluster, 'ops/batch', 'ops/monitor', 80, 'allowed', sentence);
    assert.equal(
      verdict.ingress.reason,
      'tier security passes it on, and no policy of the default tier selects ops/monitor for ingress, so it is not isolated',
    );
  });
  it('explain names every policy of the default tier that isolates, Calico’s beside NetworkPolicy’s', () => {
    const api = explainOne(cluster, 'web/api');
    assert.deepEqual(api.ingress.policies, ['web/api-ingress', 'gnp/default-deny']);
    assert.match(
      api.ingress.summary,
      /^isolated by web\/api-ingress, gnp\/default-deny; 1 rule allows traffic$/,
    );
  });
});

describe('explain with a NetworkPolicy that allows nothing beside a Calico policy of its tier that allows', () => {
  const { cluster } = yamlCluster(
    namespaceYaml('shop'),
    podYaml('shop', 'db', { app: 'db' }, '10.0.0.1'),
    podYaml('shop', 'web', { app: 'web' }, '10.0.0.2'),
    `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: shop}
spec: {podSelector: {}, policyTypes: [Ingress]}`,
    `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: allow-web, namespace: shop}
spec:
  selector: app == 'db'
  ingress: [{action: Allow, protocol: TCP, source: {selector: app == 'web'}, destination: {ports: [5432]}}]`,
  );
  it('does not say "nothing is allowed" while the Calico rule allows', () => {
    const sentence =
      'If a NetworkPolicy or GlobalNetworkPolicy in the Tier Allows or Denys the packet, then evaluation is done (reference/resources/tier): the NetworkPolicy, in the default tier, has no rule that matches';
    expectConnection(cluster, 'shop/web', 'shop/db', 5432, 'allowed', sentence);
    const db = explainOne(cluster, 'shop/db');
    assert.equal(
      db.ingress.summary,
      'isolated by shop/deny-all, calico/shop/allow-web; no NetworkPolicy rule allows anything, and 1 rule of the default tier below applies in its order',
    );
  });
  it('lists a Calico policy without an order after NetworkPolicy, where Calico evaluates it', () => {
    const { cluster: unordered } = yamlCluster(
      namespaceYaml('app'),
      podYaml('app', 'srv', { app: 'srv' }, '10.1.0.1'),
      podYaml('app', 'cli', { app: 'cli' }, '10.1.0.2'),
      `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: srv-np, namespace: app}
spec:
  podSelector: {matchLabels: {app: srv}}
  ingress: [{from: [{podSelector: {matchLabels: {app: cli}}}], ports: [{port: 80}]}]`,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: deny-cli, namespace: app}
spec:
  selector: app == 'srv'
  ingress: [{action: Deny, protocol: TCP, source: {selector: app == 'cli'}, destination: {ports: [80]}}]`,
    );
    const sentence =
      '"We insert all the NetworkPolicy Policies at order 1000.0 after conversion." (libcalico-go, k8s/conversion/conversion.go) — Policies in each Tier are then processed in order (reference/resources/tier); a policy without an order comes last, as docs/CALICO-CILIUM.md says';
    expectConnection(unordered, 'app/cli', 'app/srv', 80, 'allowed', sentence);
    const srv = explainOne(unordered, 'app/srv');
    const text = directionLines('ingress', srv.ingress, PLAIN).join('\n');
    assert.ok(
      text.indexOf('NetworkPolicy:') < text.indexOf('default tier, after NetworkPolicy:') &&
        !text.includes('before NetworkPolicy'),
      text,
    );
  });
  it('nor when the NetworkPolicy’s only rule names a port the pod does not declare', () => {
    const { cluster: named } = yamlCluster(
      namespaceYaml('shop'),
      podYaml('shop', 'db', { app: 'db' }, '10.0.0.1'),
      podYaml('shop', 'web', { app: 'web' }, '10.0.0.2'),
      `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: named, namespace: shop}
spec: {podSelector: {}, policyTypes: [Ingress], ingress: [{ports: [{port: http}]}]}`,
      `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: allow-web, namespace: shop}
spec:
  selector: app == 'db'
  ingress: [{action: Allow, protocol: TCP, source: {selector: app == 'web'}, destination: {ports: [5432]}}]`,
    );
    const db = explainOne(named, 'shop/db');
    assert.equal(
      db.ingress.summary,
      'isolated by shop/named, calico/shop/allow-web; no NetworkPolicy rule allows anything, and 1 rule of the default tier below applies in its order',
    );
  });
});
