/**
 * The ingress controller as a peer (src/analysis/ingress-controller.ts): Ingress and Route
 * objects decoded with located diagnostics, their backends resolved through Services to target
 * ports, and the controller admitted exactly where policy admits every pod of every namespace
 * (or, placed with `--ingress-controller`, where policy admits its namespace and labels).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IngressController, parseIngressControllerPlace } from '../../src/analysis/ingress-controller.ts';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { formatPortSet } from '../../src/model/port-set.ts';
import type { Cluster, Endpoint } from '../../src/model/types.ts';
import { cli } from '../helpers/cli.ts';

const APP = `
apiVersion: v1
kind: Namespace
metadata: {name: web, labels: {team: web}}
---
apiVersion: v1
kind: Pod
metadata: {name: front, namespace: web, labels: {app: front}}
spec:
  containers:
    - name: c
      ports: [{name: http, containerPort: 8080}, {name: admin, containerPort: 9000}]
---
apiVersion: v1
kind: Service
metadata: {name: front, namespace: web}
spec:
  selector: {app: front}
  ports:
    - {name: web, port: 80, targetPort: http}
    - {name: admin, port: 9000, targetPort: 9000}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: front, namespace: web}
spec:
  rules:
    - http:
        paths:
          - path: /
            pathType: Prefix
            backend: {service: {name: front, port: {number: 80}}}
`;

function load(...texts: string[]) {
  return loadFromTexts(texts.map((text, i) => ({ name: `in${i}.yaml`, text })));
}

function pod(cluster: Cluster, id: string): Endpoint {
  const found = cluster.endpoints.find((e) => e.id === id);
  assert.ok(found, `no ${id}`);
  return found;
}

/** What the controller may open to web/front with this policy (and placement). */
function controllerPorts(policy: string, place = {}): string {
  const { cluster, diagnostics } = load(APP, policy);
  const errors = diagnostics.filter((d) => d.severity === 'error');
  assert.deepEqual(errors, []);
  return formatPortSet(new IngressController(cluster, place).ports(pod(cluster, 'web/front')));
}

const networkPolicy = (from: string): string => `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: front, namespace: web}
spec:
  podSelector: {matchLabels: {app: front}}
  policyTypes: [Ingress]
  ingress:
    - from: [${from}]
`;

describe('ingress controller: where Ingress objects forward', () => {
  it('forwards to the Service port’s target port on each backend (a named target port resolved on the pod)', () => {
    assert.equal(controllerPorts(''), 'TCP 8080');
  });

  it('a Route names the Service port by name, or by its target port’s number; without port, every port', () => {
    const route = (port: string) => `
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: r, namespace: web}
spec:
  to: {kind: Service, name: front, weight: 100}
  ${port}
`;
    const ports = (port: string): string => {
      const { cluster, diagnostics } = load(
        APP.split('---\napiVersion: networking.k8s.io/v1')[0] as string,
        route(port),
      );
      assert.deepEqual(
        diagnostics.filter((d) => d.severity !== 'info'),
        [],
      );
      return formatPortSet(new IngressController(cluster).ports(pod(cluster, 'web/front')));
    };
    assert.equal(ports('port: {targetPort: web}'), 'TCP 8080');
    assert.equal(ports('port: {targetPort: 9000}'), 'TCP 9000');
    assert.equal(ports(''), 'TCP 8080,9000');
  });
});

describe('ingress controller: what policy admits', () => {
  it('not isolated: every port the Ingress forwards to', () => {
    assert.equal(controllerPorts(''), 'TCP 8080');
  });

  it('namespaceSelector {} (every pod of every namespace) admits it', () => {
    assert.equal(controllerPorts(networkPolicy('{namespaceSelector: {}}')), 'TCP 8080');
  });

  it('a podSelector of the policy’s namespace, a namespace by label, or an ipBlock does not', () => {
    assert.equal(controllerPorts(networkPolicy('{podSelector: {}}')), 'none');
    assert.equal(
      controllerPorts(networkPolicy('{namespaceSelector: {matchLabels: {name: ingress-nginx}}}')),
      'none',
    );
    assert.equal(controllerPorts(networkPolicy('{ipBlock: {cidr: 0.0.0.0/0}}')), 'none');
  });

  it('placed in a namespace (--ingress-controller), policy naming that namespace and its pods’ labels admits it', () => {
    const policy = networkPolicy(
      '{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}, podSelector: {matchLabels: {app: nginx}}}',
    );
    assert.equal(controllerPorts(policy), 'none');
    assert.equal(controllerPorts(policy, { namespace: 'ingress-nginx' }), 'none');
    const place = parseIngressControllerPlace('ingress-nginx/app=nginx');
    assert.deepEqual(place, { namespace: 'ingress-nginx', labels: { app: 'nginx' } });
    assert.equal(controllerPorts(policy, place), 'TCP 8080');
    assert.match(parseIngressControllerPlace('Bad_NS') as string, /takes NAMESPACE/);
  });

  it('AdminNetworkPolicy: a Deny from every namespace ({}) stops it; one from labelled namespaces does not', () => {
    const anp = (from: string) => `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: front}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress:
    - name: deny
      action: Deny
      from: [${from}]
`;
    assert.equal(controllerPorts(anp('{namespaces: {}}')), 'none');
    assert.equal(controllerPorts(anp('{namespaces: {matchLabels: {team: web}}}')), 'TCP 8080');
  });

  it('Calico: a GlobalNetworkPolicy allowing all() namespaces admits it; nets do not', () => {
    const calico = (source: string) => `
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: front}
spec:
  selector: app == 'front'
  types: [Ingress]
  ingress:
    - action: Allow
      source: ${source}
`;
    assert.equal(controllerPorts(calico('{namespaceSelector: all()}')), 'TCP 8080');
    assert.equal(controllerPorts(calico("{nets: ['0.0.0.0/0']}")), 'none');
  });

  it('Cilium: fromEntities cluster admits it; fromEndpoints {} of a namespaced policy does not', () => {
    const cilium = (rule: string) => `
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: front, namespace: web}
spec:
  endpointSelector: {matchLabels: {app: front}}
  ingress:
    - ${rule}
`;
    assert.equal(controllerPorts(cilium('fromEntities: [cluster]')), 'TCP 8080');
    assert.equal(controllerPorts(cilium('fromEndpoints: [{}]')), 'none');
  });
});

describe('ingress controller: reading Ingress and Route objects', () => {
  it('reports unknown fields and bad references where they are, and reads the other objects', () => {
    const broken = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: typo, namespace: web}
spec:
  rules:
    - http:
        paths:
          - backend: {service: {name: front, prot: {number: 80}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: dangling, namespace: web}
spec:
  defaultBackend: {service: {name: gone, port: {number: 80}}}
  rules:
    - http:
        paths:
          - backend: {service: {name: front, port: {number: 81}}}
          - backend: {resource: {apiGroup: k8s.example.com, kind: Bucket, name: b}}
---
apiVersion: extensions/v1beta1
kind: Ingress
metadata: {name: old, namespace: web}
spec: {backend: {serviceName: front, servicePort: 80}}
`;
    const { cluster, diagnostics } = load(APP, broken);
    const found = diagnostics
      .filter((d) => d.file === 'in1.yaml')
      .map((d) => `${d.code} ${d.line}:${d.column} ${d.object ?? ''}`);
    assert.deepEqual(found, [
      // The misspelt port, and the port it leaves missing.
      'SCHEMA_REQUIRED 9:32 Ingress web/typo',
      'SCHEMA_UNKNOWN_FIELD 9:46 Ingress web/typo',
      'INGRESS_SERVICE_UNKNOWN 15:19 Ingress web/dangling',
      'INGRESS_SERVICE_UNKNOWN 19:22 Ingress web/dangling',
      'INGRESS_BACKEND_NOT_ANALYSED 20:33 Ingress web/dangling',
      'KIND_SKIPPED 22:1 Ingress web/old',
    ]);
    // The good Ingress of APP is still read and still forwards.
    assert.deepEqual(
      cluster.ingresses?.map((i) => `${i.kind} ${i.namespace}/${i.name}`),
      ['Ingress web/dangling', 'Ingress web/front'],
    );
    assert.equal(formatPortSet(new IngressController(cluster).ports(pod(cluster, 'web/front'))), 'TCP 8080');
  });
});

describe('ingress controller in matrix and check', () => {
  it('is a source row in every format, and -o json gains ingressController only with Ingress objects', async () => {
    const json = await cli(['matrix', '-f', 'examples/ingress', '-o', 'json']);
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as { ingressController: unknown[] };
    assert.deepEqual(parsed.ingressController, [
      {
        from: '{ingress-controller}',
        to: 'web/api',
        allowed: false,
        ports: {},
        fromKind: 'IngressController',
        toKind: 'Deployment',
      },
      {
        from: '{ingress-controller}',
        to: 'web/storefront',
        allowed: true,
        ports: { TCP: [[8080, 8080]] },
        fromKind: 'IngressController',
        toKind: 'Deployment',
      },
    ]);
    const without = await cli(['matrix', '-f', 'examples/shop', '-o', 'json']);
    assert.deepEqual(Object.keys(JSON.parse(without.stdout) as object), ['results', 'addresses']);
    const csv = await cli(['matrix', '-f', 'examples/ingress', '-o', 'csv']);
    assert.match(csv.stdout, /^\{ingress-controller\},web\/storefront\[Deployment\],"TCP 8080"$/m);
    assert.match(csv.stdout, /^\{ingress-controller\},web\/api\[Deployment\],"none"$/m);
    const md = await cli(['matrix', '-f', 'examples/ingress', '--port', '8000', '-o', 'md']);
    // Its last column is the addresses outside the cluster: no question from a source row.
    assert.match(md.stdout, /^\| \{ingress-controller\} \| ✗ \| ✗ \| – \|$/m);
    const text = await cli(['matrix', '-f', 'examples/ingress', '--port', '8080']);
    assert.match(text.stdout, /^\{ingress-controller\} +X {2}\. {2}- {2}4$/m);
  });

  it('check --from ingress-controller judges the destination’s ingress and says what Ingress objects forward', async () => {
    const denied = await cli([
      'check',
      '-f',
      'examples/ingress',
      '--from',
      'ingress-controller',
      '--to',
      'web/api',
      '--port',
      '8000',
      '-o',
      'json',
    ]);
    const verdict = (JSON.parse(denied.stdout) as { verdict: { allowed: boolean; notes: string[] } }).verdict;
    assert.equal(verdict.allowed, false);
    assert.deepEqual(verdict.notes, ['Ingress and Route objects forward to web/api on TCP 8000']);
    const to = await cli([
      'check',
      '-f',
      'examples/ingress',
      '--from',
      'web/api',
      '--to',
      '{ingress-controller}',
    ]);
    assert.equal(to.code, 2);
    assert.match(to.stderr, /source only/);
  });
});
