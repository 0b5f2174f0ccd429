/**
 * Cilium's own documented examples (docs.cilium.io/en/stable/security/policy/…; the YAML is
 * Cilium's examples/policies/…), each outcome asserted with the sentence it follows from.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { directionLines } from '../../src/analysis/format/explain-text.ts';
import { PLAIN } from '../../src/analysis/format/style.ts';
import { expectConnection, explainOne, namespaceYaml, podYaml, yamlCluster } from '../helpers/engine-docs.ts';

const DOCS = 'https://docs.cilium.io/en/stable/security/policy';

/** Pods on two nodes: node-1 (192.168.0.1) and node-2 (192.168.0.2). */
const BASE = [
  namespaceYaml('default'),
  podYaml('default', 'frontend', { role: 'frontend' }, '10.0.0.1', { node: 'node-1', hostIp: '192.168.0.1' }),
  podYaml('default', 'backend', { role: 'backend' }, '10.0.0.2', { node: 'node-1', hostIp: '192.168.0.1' }),
  podYaml('default', 'other', { role: 'other' }, '10.0.0.3', { node: 'node-2', hostIp: '192.168.0.2' }),
];

describe(`${DOCS}/layer3/ — "Endpoints based"`, () => {
  it('"Simple Ingress Allow" (examples/policies/l3/simple/l3.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "l3-rule"
spec:
  endpointSelector:
    matchLabels:
      role: backend
  ingress:
  - fromEndpoints:
    - matchLabels:
        role: frontend`,
    );
    const sentence =
      'use a simple ingress rule to allow communication from endpoints with the label role=frontend to endpoints with the label role=backend.';
    const verdict = expectConnection(
      cluster,
      'default/frontend',
      'default/backend',
      8080,
      'allowed',
      sentence,
    );
    assert.match(verdict.ingress.reason, /allowed by cilium\/default\/l3-rule ingress\[0\]/);
    expectConnection(cluster, 'default/other', 'default/backend', 8080, 'denied', sentence);
  });
  it('"Ingress Allow All Endpoints": an empty EndpointSelector selects all endpoints', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'victim', { role: 'victim' }, '10.0.0.9'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "allow-all-to-victim"
spec:
  endpointSelector:
    matchLabels:
      role: victim
  ingress:
  - fromEndpoints:
    - {}`,
    );
    const sentence =
      'An empty EndpointSelector will select all endpoints, thus writing a rule that will allow all ingress traffic to an endpoint may be done as follows';
    expectConnection(cluster, 'default/other', 'default/victim', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/frontend', 'default/victim', 443, 'allowed', sentence);
  });
  it('"Simple Egress Allow" (examples/policies/l3/simple/l3_egress.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "l3-egress-rule"
spec:
  endpointSelector:
    matchLabels:
      role: frontend
  egress:
  - toEndpoints:
    - matchLabels:
        role: backend`,
    );
    const sentence =
      'use a simple egress rule to allow communication to endpoints with the label role=backend from endpoints with the label role=frontend.';
    expectConnection(cluster, 'default/frontend', 'default/backend', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/frontend', 'default/other', 80, 'denied', sentence);
  });
  it('"Egress Allow All Endpoints": all other endpoints in the same namespace', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      namespaceYaml('elsewhere'),
      podYaml('elsewhere', 'x', { role: 'x' }, '10.0.1.1'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "allow-all-from-frontend"
spec:
  endpointSelector:
    matchLabels:
      role: frontend
  egress:
  - toEndpoints:
    - {}`,
    );
    const sentence =
      'The following rule allows all egress traffic from endpoints with the label role=frontend to all other endpoints in the same namespace';
    expectConnection(cluster, 'default/frontend', 'default/other', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/frontend', 'elsewhere/x', 80, 'denied', sentence);
    expectConnection(cluster, 'default/frontend', '192.0.2.1', 80, 'denied', sentence);
  });
  it('"Simple Egress Deny" (examples/policies/l3/egress-deny/egress-deny.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "deny-egress-example"
spec:
  endpointSelector:
    matchLabels:
      role: frontend
  egress:
  - toEntities:
    - all
  egressDeny:
  - toEndpoints:
    - matchLabels:
        role: backend`,
    );
    const sentence =
      'If an egressDeny rule matches, egress traffic is denied even if the policy contains egress rules that would otherwise allow it.';
    const verdict = expectConnection(cluster, 'default/frontend', 'default/backend', 80, 'denied', sentence);
    assert.match(verdict.egress.reason, /denied by cilium\/default\/deny-egress-example egressDeny\[0\]/);
    expectConnection(cluster, 'default/frontend', 'default/other', 80, 'allowed', 'toEntities: all');
    expectConnection(cluster, 'default/frontend', '192.0.2.1', 80, 'allowed', 'toEntities: all');
  });
  it('"Ingress/Egress Default Deny": a rule section puts the endpoint in default deny', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'restricted', { role: 'restricted' }, '10.0.0.7'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "deny-all-egress"
spec:
  endpointSelector:
    matchLabels:
      role: restricted
  egress:
  - {}`,
    );
    const sentence =
      'An endpoint can be put into the default deny mode at ingress or egress if a rule selects the endpoint and contains the respective rule section ingress or egress. … without whitelisting other peers at the same time.';
    expectConnection(cluster, 'default/restricted', 'default/other', 80, 'denied', sentence);
    expectConnection(cluster, 'default/restricted', '192.0.2.1', 443, 'denied', sentence);
    expectConnection(cluster, 'default/other', 'default/restricted', 80, 'allowed', sentence);
  });
});

describe(`${DOCS}/layer3/ — "Entities based"`, () => {
  it('"Access to/from local host" (examples/policies/l3/entities/host.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'dev', { env: 'dev' }, '10.0.0.5', { node: 'node-1', hostIp: '192.168.0.1' }),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "dev-to-host"
spec:
  endpointSelector:
    matchLabels:
      env: dev
  egress:
    - toEntities:
      - host`,
    );
    const sentence =
      'Allow all endpoints with the label env=dev to access the host that is serving the particular endpoint.';
    expectConnection(cluster, 'default/dev', '192.168.0.1', 10250, 'allowed', sentence);
    expectConnection(cluster, 'default/dev', '192.168.0.2', 10250, 'denied', sentence);
    expectConnection(cluster, 'default/dev', 'default/other', 80, 'denied', sentence);
  });
  it('"Access to/from all nodes in the cluster" (examples/policies/l3/entities/nodes.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'dev', { env: 'dev' }, '10.0.0.5', { node: 'node-1', hostIp: '192.168.0.1' }),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "to-dev-from-nodes-in-cluster"
spec:
  endpointSelector:
    matchLabels:
      env: dev
  ingress:
    - fromEntities:
      - host
      - remote-node`,
    );
    const sentence =
      'Allow all endpoints with the label env=dev to receive traffic from any host in the cluster that Cilium is running on.';
    expectConnection(cluster, '192.168.0.1', 'default/dev', 8080, 'allowed', sentence);
    expectConnection(cluster, '192.168.0.2', 'default/dev', 8080, 'allowed', sentence);
    expectConnection(cluster, 'default/other', 'default/dev', 8080, 'denied', sentence);
    expectConnection(cluster, '192.0.2.1', 'default/dev', 8080, 'denied', sentence);
  });
  it('"Access to/from outside cluster" (examples/policies/l3/entities/world.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'public', { role: 'public' }, '10.0.0.6'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "from-world-to-role-public"
spec:
  endpointSelector:
    matchLabels:
      role: public
  ingress:
    - fromEntities:
      - world`,
    );
    const sentence =
      'enable access from outside of the cluster to all endpoints that have the label role=public. (The world entity corresponds to all endpoints outside of the cluster.)';
    expectConnection(cluster, '203.0.113.9', 'default/public', 443, 'allowed', sentence);
    expectConnection(cluster, 'default/other', 'default/public', 443, 'denied', sentence);
    expectConnection(cluster, '192.168.0.2', 'default/public', 443, 'denied', sentence);
  });
});

describe(`${DOCS}/layer3/ — "IP/CIDR based"`, () => {
  it('"Allow to external CIDR block" (examples/policies/l3/cidr/cidr.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'svc', { app: 'myService' }, '10.0.0.8'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "cidr-rule"
spec:
  endpointSelector:
    matchLabels:
      app: myService
  egress:
  - toCIDR:
    - 20.1.1.1/32
  - toCIDRSet:
    - cidr: 10.0.0.0/8
      except:
      - 10.96.0.0/12`,
    );
    const sentence =
      'allow all endpoints with the label app=myService to talk to the external IP 20.1.1.1, as well as the CIDR prefix 10.0.0.0/8, but not CIDR prefix 10.96.0.0/12';
    expectConnection(cluster, 'default/svc', '20.1.1.1', 443, 'allowed', sentence);
    expectConnection(cluster, 'default/svc', '10.200.0.1', 443, 'allowed', sentence);
    expectConnection(cluster, 'default/svc', '10.96.0.10', 443, 'denied', sentence);
    expectConnection(cluster, 'default/svc', '20.1.1.2', 443, 'denied', sentence);
    expectConnection(
      cluster,
      'default/svc',
      'default/other',
      443,
      'denied',
      'CIDR rules do not apply to traffic where both sides of the connection are either managed by Cilium or use an IP belonging to a node in the cluster (including host networking pods).',
    );
  });
});

describe(`${DOCS}/layer4/`, () => {
  it('"Example (L4)" (examples/policies/l4/l4.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'svc', { app: 'myService' }, '10.0.0.8'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "l4-rule"
spec:
  endpointSelector:
    matchLabels:
      app: myService
  egress:
    - toPorts:
      - ports:
        - port: "80"
          protocol: TCP`,
    );
    const sentence =
      'limits all endpoints with the label app=myService to only be able to emit packets using TCP on port 80, to any layer 3 destination';
    expectConnection(cluster, 'default/svc', '192.0.2.1', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/svc', 'default/backend', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/svc', 'default/backend', 443, 'denied', sentence);
    expectConnection(cluster, 'default/svc', 'default/backend', 80, 'denied', sentence, 'UDP');
  });
  it('"Example Port Ranges" (examples/policies/l4/l4_port_range.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'svc', { app: 'myService' }, '10.0.0.8'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "l4-port-range-rule"
spec:
  endpointSelector:
    matchLabels:
      app: myService
  egress:
    - toPorts:
      - ports:
        - port: "80"
          endPort: 444
          protocol: TCP`,
    );
    const sentence = 'only be able to emit packets using TCP on ports 80-444, to any layer 3 destination';
    for (const port of [80, 200, 444])
      expectConnection(cluster, 'default/svc', '192.0.2.1', port, 'allowed', sentence);
    for (const port of [79, 445])
      expectConnection(cluster, 'default/svc', '192.0.2.1', port, 'denied', sentence);
  });
  it('"Labels-dependent Layer 4 rule" (examples/policies/l4/l3_l4_combined.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "l4-rule"
spec:
  endpointSelector:
    matchLabels:
      role: backend
  ingress:
  - fromEndpoints:
    - matchLabels:
        role: frontend
    toPorts:
    - ports:
      - port: "80"
        protocol: TCP`,
    );
    expectConnection(
      cluster,
      'default/frontend',
      'default/backend',
      80,
      'allowed',
      'enables all endpoints with the label role=frontend to communicate with all endpoints with the label role=backend, but they must communicate using TCP on port 80.',
    );
    expectConnection(
      cluster,
      'default/other',
      'default/backend',
      80,
      'denied',
      'Endpoints with other labels will not be able to communicate with the endpoints with the label role=backend',
    );
    expectConnection(
      cluster,
      'default/frontend',
      'default/backend',
      8080,
      'denied',
      'endpoints with the label role=frontend will not be able to communicate with role=backend on ports other than 80.',
    );
  });
  it('"CIDR-dependent Layer 4 Rule" (examples/policies/l4/cidr_l4_combined.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      podYaml('default', 'crawler', { role: 'crawler' }, '10.0.0.4'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "cidr-l4-rule"
spec:
  endpointSelector:
    matchLabels:
      role: crawler
  egress:
  - toCIDR:
    - 192.0.2.0/24
    toPorts:
    - ports:
      - port: "80"
        protocol: TCP`,
    );
    const sentence =
      'enables all endpoints with the label role=crawler to communicate with all remote destinations inside the CIDR 192.0.2.0/24, but they must communicate using TCP on port 80.';
    expectConnection(cluster, 'default/crawler', '192.0.2.10', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/crawler', '192.0.2.10', 443, 'denied', sentence);
    expectConnection(cluster, 'default/crawler', '198.51.100.1', 80, 'denied', sentence);
  });
});

describe(`${DOCS}/deny/`, () => {
  /** The table's server with one column's allow and deny policies. */
  const column = (allow: boolean, denyPort80: boolean, denyClient: boolean) =>
    yamlCluster(
      namespaceYaml('default'),
      podYaml('default', 'server', { app: 'server' }, '10.0.0.1'),
      podYaml('default', 'client', { app: 'client' }, '10.0.0.2'),
      ...(allow
        ? [
            `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: allow}
spec:
  endpointSelector: {matchLabels: {app: server}}
  ingress:
  - toPorts: [{ports: [{port: "80", protocol: TCP}], rules: {http: [{method: GET}]}}]
  - toPorts: [{ports: [{port: "80", protocol: TCP}]}]
  - toPorts: [{ports: [{port: "81", protocol: TCP}]}]
  - fromEndpoints: [{matchLabels: {app: client}}]`,
          ]
        : []),
      ...(denyPort80
        ? [
            `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: deny-80}
spec:
  endpointSelector: {matchLabels: {app: server}}
  ingressDeny:
  - toPorts: [{ports: [{port: "80", protocol: TCP}]}]`,
          ]
        : []),
      ...(denyClient
        ? [
            `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: deny-client}
spec:
  endpointSelector: {matchLabels: {app: server}}
  ingressDeny:
  - fromEndpoints: [{matchLabels: {app: client}}]`,
          ]
        : []),
    ).cluster;
  const table =
    'If multiple allow and deny policies are applied to the same pod, the following table represents the expected enforcement';
  it('column 1: allow policies only — curl :81 and :80 allowed', () => {
    const cluster = column(true, false, false);
    expectConnection(cluster, 'default/client', 'default/server', 81, 'allowed', table);
    expectConnection(cluster, 'default/client', 'default/server', 80, 'allowed', table);
  });
  it('column 2: and a deny on 80/TCP — :81 allowed, :80 denied', () => {
    const cluster = column(true, true, false);
    expectConnection(
      cluster,
      'default/client',
      'default/server',
      81,
      'allowed',
      'Curl to port 81 is allowed because there is an allow policy on port 81, and no deny policy on that port;',
    );
    expectConnection(
      cluster,
      'default/client',
      'default/server',
      80,
      'denied',
      'Curl to port 80 is denied because there is a deny policy on that port;',
    );
  });
  it('columns 3 and 4: a deny of the client — every port denied', () => {
    for (const cluster of [column(true, false, true), column(true, true, true)]) {
      expectConnection(cluster, 'default/client', 'default/server', 81, 'denied', table);
      expectConnection(cluster, 'default/client', 'default/server', 80, 'denied', table);
    }
  });
  it('column 5: deny policies alone still put the pod in default deny', () => {
    const cluster = column(false, true, false);
    expectConnection(
      cluster,
      'default/client',
      'default/server',
      81,
      'denied',
      'Similarly to "allow" policies, Pods will enter default-deny mode as soon as a single policy selects it.',
    );
  });
  it('the external-lockdown policy denies "world" and keeps the cluster (examples/policies/l3/entities/from_world_deny.yaml)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: "cilium.io/v2"
kind: CiliumClusterwideNetworkPolicy
metadata:
  name: "external-lockdown"
spec:
  endpointSelector: {}
  ingressDeny:
  - fromEntities:
    - "world"
  ingress:
  - fromEntities:
    - "all"`,
    );
    const sentence =
      'The following policy will deny ingress from "world" on all namespaces on all Pods managed by Cilium. Existing inter-cluster policies will still be allowed as this policy is allowing traffic from everywhere except from "world".';
    expectConnection(cluster, '203.0.113.5', 'default/backend', 80, 'denied', sentence);
    expectConnection(cluster, 'default/frontend', 'default/backend', 80, 'allowed', sentence);
    expectConnection(cluster, '192.168.0.2', 'default/backend', 80, 'allowed', sentence);
  });
});

describe(`${DOCS}/kubernetes/`, () => {
  it('"Example: Enforce namespace boundaries" (examples/policies/kubernetes/namespace/isolate-namespaces.yaml)', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('ns1'),
      namespaceYaml('ns2'),
      namespaceYaml('ns3'),
      podYaml('ns1', 'a', { app: 'a' }, '10.0.1.1'),
      podYaml('ns1', 'b', { app: 'b' }, '10.0.1.2'),
      podYaml('ns2', 'c', { app: 'c' }, '10.0.2.1'),
      podYaml('ns3', 'd', { app: 'd' }, '10.0.3.1'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "isolate-ns1"
  namespace: ns1
spec:
  endpointSelector:
    matchLabels:
      {}
  ingress:
  - fromEndpoints:
    - matchLabels:
        {}`,
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "isolate-ns1"
  namespace: ns2
spec:
  endpointSelector:
    matchLabels:
      {}
  ingress:
  - fromEndpoints:
    - matchLabels:
        {}`,
    );
    const sentence =
      'the pods can still communicate egress to anywhere unless the destination is in either ns1 or ns2 in which case both source and destination have to be in the same namespace.';
    expectConnection(cluster, 'ns1/b', 'ns1/a', 80, 'allowed', sentence);
    expectConnection(cluster, 'ns2/c', 'ns1/a', 80, 'denied', sentence);
    expectConnection(cluster, 'ns3/d', 'ns2/c', 80, 'denied', sentence);
    expectConnection(cluster, 'ns1/a', 'ns3/d', 80, 'allowed', sentence);
  });
  it('"Example: Expose pods across namespaces" (examples/policies/kubernetes/namespace/namespace-policy.yaml)', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('ns1'),
      namespaceYaml('ns2'),
      podYaml('ns1', 'leia', { name: 'leia' }, '10.0.1.1'),
      podYaml('ns1', 'luke', { name: 'luke' }, '10.0.1.2'),
      podYaml('ns2', 'luke', { name: 'luke' }, '10.0.2.1'),
      podYaml('ns2', 'vader', { name: 'vader' }, '10.0.2.2'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "k8s-expose-across-namespace"
  namespace: ns1
spec:
  endpointSelector:
    matchLabels:
      name: leia
  ingress:
  - fromEndpoints:
    - matchLabels:
        k8s:io.kubernetes.pod.namespace: ns2
        name: luke`,
    );
    const sentence =
      'exposes all pods with the label name=leia in the namespace ns1 to all pods with the label name=luke in the namespace ns2.';
    expectConnection(cluster, 'ns2/luke', 'ns1/leia', 80, 'allowed', sentence);
    expectConnection(cluster, 'ns1/luke', 'ns1/leia', 80, 'denied', sentence);
    expectConnection(cluster, 'ns2/vader', 'ns1/leia', 80, 'denied', sentence);
  });
  it('"Example: Allow egress to kube-dns in kube-system namespace" (kubedns-policy.yaml)', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('public'),
      namespaceYaml('kube-system'),
      podYaml('public', 'app', { app: 'x' }, '10.0.1.1'),
      podYaml('kube-system', 'dns', { 'k8s-app': 'kube-dns' }, '10.0.9.1'),
      podYaml('kube-system', 'other', { 'k8s-app': 'metrics' }, '10.0.9.2'),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "allow-to-kubedns"
  namespace: public
spec:
  endpointSelector:
    {}
  egress:
  - toEndpoints:
    - matchLabels:
        k8s:io.kubernetes.pod.namespace: kube-system
        k8s-app: kube-dns
    toPorts:
    - ports:
      - port: '53'
        protocol: UDP`,
    );
    const sentence =
      'allows all pods in the public namespace in which the policy is created to communicate with kube-dns on port 53/UDP in the kube-system namespace.';
    expectConnection(cluster, 'public/app', 'kube-system/dns', 53, 'allowed', sentence, 'UDP');
    expectConnection(cluster, 'public/app', 'kube-system/dns', 53, 'denied', sentence, 'TCP');
    expectConnection(cluster, 'public/app', 'kube-system/other', 53, 'denied', sentence, 'UDP');
  });
  it('"ServiceAccounts" (examples/policies/kubernetes/serviceaccount/serviceaccount-policy.yaml)', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('default'),
      podYaml('default', 'leia', { app: 'a' }, '10.0.0.1', { serviceAccount: 'leia' }),
      podYaml('default', 'luke', { app: 'b' }, '10.0.0.2', { serviceAccount: 'luke' }),
      podYaml('default', 'vader', { app: 'c' }, '10.0.0.3', { serviceAccount: 'vader' }),
      `apiVersion: "cilium.io/v2"
kind: CiliumNetworkPolicy
metadata:
  name: "k8s-svc-account"
spec:
  endpointSelector:
    matchLabels:
      io.cilium.k8s.policy.serviceaccount: leia
  ingress:
  - fromEndpoints:
    - matchLabels:
        io.cilium.k8s.policy.serviceaccount: luke`,
    );
    const sentence =
      'grants any pod running under the service account of "luke" to issue a HTTP GET /public request on TCP port 80 to all pods running associated to the service account of "leia".';
    expectConnection(cluster, 'default/luke', 'default/leia', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/vader', 'default/leia', 80, 'denied', sentence);
  });
  it('"Clusterwide Policies" (examples/policies/kubernetes/clusterwide/clusterscope-policy.yaml)', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('ns1'),
      namespaceYaml('ns2'),
      podYaml('ns1', 'leia', { name: 'leia' }, '10.0.1.1'),
      podYaml('ns2', 'luke', { name: 'luke' }, '10.0.2.1'),
      podYaml('ns2', 'vader', { name: 'vader' }, '10.0.2.2'),
      `apiVersion: "cilium.io/v2"
kind: CiliumClusterwideNetworkPolicy
metadata:
  name: "clusterwide-policy-example"
spec:
  description: "Policy for selective ingress allow to a pod from only a pod with given label"
  endpointSelector:
    matchLabels:
      name: leia
  ingress:
  - fromEndpoints:
    - matchLabels:
        name: luke`,
    );
    const sentence =
      'this policy will allow ingress traffic from pods matching the label name=luke from any namespace to pods matching the labels name=leia in any namespace.';
    expectConnection(cluster, 'ns2/luke', 'ns1/leia', 80, 'allowed', sentence);
    expectConnection(cluster, 'ns2/vader', 'ns1/leia', 80, 'denied', sentence);
  });
  it('"Example: Allow all ingress to kube-dns" (wildcard-from-endpoints.yaml)', () => {
    const { cluster } = yamlCluster(
      namespaceYaml('kube-system'),
      namespaceYaml('shop'),
      podYaml('kube-system', 'dns', { 'k8s-app': 'kube-dns' }, '10.0.9.1'),
      podYaml('shop', 'web', { app: 'web' }, '10.0.1.1'),
      `apiVersion: "cilium.io/v2"
kind: CiliumClusterwideNetworkPolicy
metadata:
  name: "wildcard-from-endpoints"
spec:
  endpointSelector:
    matchLabels:
      k8s:io.kubernetes.pod.namespace: kube-system
      k8s-app: kube-dns
  ingress:
  - fromEndpoints:
    - {}
    toPorts:
    - ports:
      - port: "53"
        protocol: UDP`,
    );
    const sentence =
      'allows all Cilium managed endpoints in the cluster to communicate with kube-dns on port 53/UDP in the kube-system namespace.';
    expectConnection(cluster, 'shop/web', 'kube-system/dns', 53, 'allowed', sentence, 'UDP');
    expectConnection(cluster, 'shop/web', 'kube-system/dns', 53, 'denied', sentence, 'TCP');
    expectConnection(cluster, '198.51.100.7', 'kube-system/dns', 53, 'denied', sentence, 'UDP');
  });
});

describe(`${DOCS}/intro/ — "Policy Enforcement Modes"`, () => {
  it('"This state is per-direction and can be adjusted on a per-policy basis" (enableDefaultDeny)', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: no-backend}
spec:
  endpointSelector: {matchLabels: {role: frontend}}
  enableDefaultDeny: {egress: false}
  egressDeny:
  - toEndpoints: [{matchLabels: {role: backend}}]`,
    );
    const sentence =
      'EnableDefaultDeny determines whether this policy configures the subject endpoint(s) to have a default deny mode. (If multiple policies apply to an endpoint, that endpoint’s default deny will be enabled if any policy requests it.)';
    expectConnection(cluster, 'default/frontend', 'default/backend', 80, 'denied', sentence);
    expectConnection(cluster, 'default/frontend', 'default/other', 80, 'allowed', sentence);
    expectConnection(cluster, 'default/frontend', '192.0.2.1', 80, 'allowed', sentence);
  });
  it('a policy whose default deny is off is not named as holding the endpoint to the end of the tier', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: strict}
spec:
  endpointSelector: {matchLabels: {role: backend}}
  ingress: [{fromEndpoints: [{matchLabels: {role: nobody}}]}]`,
      `apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: lenient}
spec:
  endpointSelector: {matchLabels: {role: backend}}
  enableDefaultDeny: {ingress: false}
  ingress: [{fromEndpoints: [{matchLabels: {role: other}}]}]`,
    );
    const sentence =
      "that endpoint's default deny will be enabled if any policy requests it (enableDefaultDeny)";
    expectConnection(cluster, 'default/other', 'default/backend', 80, 'allowed', sentence);
    const denied = expectConnection(cluster, 'default/frontend', 'default/backend', 80, 'denied', sentence);
    assert.deepEqual(
      denied.ingress.walk?.map((step) => [step.endOfTier, step.policies]),
      [[true, ['cilium/default/strict']]],
    );
  });
  it('"If any rule selects an Endpoint and the rule has an ingress section, the endpoint goes into default deny at ingress."', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: in}
spec:
  endpointSelector: {matchLabels: {role: backend}}
  ingress:
  - fromEndpoints: [{matchLabels: {role: frontend}}]`,
    );
    const sentence =
      'If any rule selects an Endpoint and the rule has an ingress section, the endpoint goes into default deny at ingress.';
    expectConnection(cluster, 'default/other', 'default/backend', 80, 'denied', sentence);
    expectConnection(
      cluster,
      'default/backend',
      'default/other',
      80,
      'allowed',
      `${sentence} (egress stays open)`,
    );
  });
});

describe(`${DOCS}/kubernetes/ with NetworkPolicy: "Deny policies take precedence over allow policies, regardless of whether they are a Cilium Network Policy, a Clusterwide Cilium Network Policy or even a Kubernetes Network Policy."`, () => {
  it('a Cilium deny beats a NetworkPolicy allow, and the allows of both add up', () => {
    const { cluster } = yamlCluster(
      ...BASE,
      `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: backend, namespace: default}
spec:
  podSelector: {matchLabels: {role: backend}}
  ingress: [{from: [{podSelector: {matchLabels: {role: frontend}}}]}]`,
      `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: backend-extra}
spec:
  endpointSelector: {matchLabels: {role: backend}}
  ingressDeny:
  - toPorts: [{ports: [{port: "22", protocol: TCP}]}]
  ingress:
  - fromEndpoints: [{matchLabels: {role: other}}]`,
    );
    const sentence =
      'Deny policies take precedence over allow policies, regardless of whether they are a Cilium Network Policy, a Clusterwide Cilium Network Policy or even a Kubernetes Network Policy.';
    expectConnection(cluster, 'default/frontend', 'default/backend', 22, 'denied', sentence);
    expectConnection(cluster, 'default/frontend', 'default/backend', 80, 'allowed', sentence);
    expectConnection(
      cluster,
      'default/other',
      'default/backend',
      80,
      'allowed',
      'If there is an intersection between two or more rules, then traffic matching the union of those rules will be allowed. (intro, "Rule Basics")',
    );
    // explain lists the deny before NetworkPolicy's rules, without Calico's order (Cilium has none).
    const backend = explainOne(cluster, 'default/backend');
    const text = directionLines('ingress', backend.ingress, PLAIN).join('\n');
    assert.ok(text.includes('    Cilium, before NetworkPolicy:\n'), text);
    assert.ok(!text.includes('order 1000'), text);
    assert.ok(text.indexOf('ingressDeny[0]') < text.indexOf('\n    NetworkPolicy:\n'), text);
  });
});
