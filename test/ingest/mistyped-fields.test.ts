/**
 * A field of the wrong type (or a missing required one) does not hide an object's other
 * problems, whatever its kind: the field is reported, the rest of the object is still checked
 * (one round of fixes meets every problem), what the removal alone implies is not reported, and
 * the object is still skipped. NetworkPolicy's cases are in diagnostics.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';

function problems(text: string): { found: [string, string | undefined, number][]; objects: number } {
  const { cluster, diagnostics } = loadFromTexts([{ name: 'bad.yaml', text }]);
  return {
    found: diagnostics.map((d) => [d.code, d.path, d.line]),
    objects: cluster.clusterPolicies.length + cluster.endpoints.length,
  };
}

const header = (apiVersion: string, kind: string, name: string): string =>
  `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: ${name}\n`;
const ANP = header('policy.networking.k8s.io/v1alpha1', 'AdminNetworkPolicy', 'anp');
const BANP = header('policy.networking.k8s.io/v1alpha1', 'BaselineAdminNetworkPolicy', 'default');
const CNP = header('policy.networking.k8s.io/v1alpha2', 'ClusterNetworkPolicy', 'cnp');

describe('a mistyped field does not hide the rest of the object', () => {
  it('AdminNetworkPolicy: a mistyped priority and an invalid CIDR in a peer are both reported', () => {
    const text = `${ANP}spec:
  priority: "high"
  subject: {namespaces: {}}
  egress:
    - action: Deny
      to:
        - networks: ["10.0.0.0/33"]
`;
    assert.deepEqual(problems(text), {
      found: [
        ['SCHEMA_TYPE', 'spec.priority', 6],
        ['CIDR_INVALID', 'spec.egress[0].to[0].networks[0]', 11],
      ],
      objects: 0,
    });
  });

  it('AdminNetworkPolicy: required fields stood in for are not judged, their siblings are', () => {
    // No priority, a subject and an action of the wrong type, a rule's `to` that is not a list.
    const text = `${ANP}spec:
  subject: "everything"
  ingress:
    - action: 7
      from: [{namespaces: {}}]
      ports:
        - portNumber: {port: "80", protocol: tcp}
        - portRange: {start: 90, end: 80}
  egress:
    - {action: Allow, to: "nowhere"}
    - {action: Bogus, to: [{namespaces: {}}]}
`;
    assert.deepEqual(problems(text).found, [
      ['SCHEMA_REQUIRED', 'spec.priority', 6],
      ['SCHEMA_TYPE', 'spec.subject', 6],
      ['SCHEMA_TYPE', 'spec.ingress[0].action', 8],
      ['SCHEMA_TYPE', 'spec.ingress[0].ports[0].portNumber.port', 11],
      // The protocol beside the mistyped port is judged on its own.
      ['PROTOCOL_INVALID', 'spec.ingress[0].ports[0].portNumber.protocol', 11],
      ['CLUSTER_PORT_INVALID', 'spec.ingress[0].ports[1].portRange.end', 12],
      ['SCHEMA_TYPE', 'spec.egress[0].to', 14],
      ['ACTION_INVALID', 'spec.egress[1].action', 15],
    ]);
  });

  it('BaselineAdminNetworkPolicy: a mistyped label in the subject and a bad CIDR', () => {
    const text = `${BANP}spec:
  subject:
    namespaces: {matchLabels: {app: 3, "-bad": x}}
  egress:
    - action: Deny
      to: [{networks: ["not-a-cidr"]}]
`;
    assert.deepEqual(problems(text).found, [
      ['SCHEMA_TYPE', 'spec.subject.namespaces.matchLabels.app', 7],
      ['LABEL_KEY_INVALID', 'spec.subject.namespaces.matchLabels.-bad', 7],
      ['CIDR_INVALID', 'spec.egress[0].to[0].networks[0]', 10],
    ]);
  });

  it('ClusterNetworkPolicy: a mistyped tier does not hide an out-of-range priority', () => {
    const text = `${CNP}spec:
  tier: 5
  priority: 2000
  subject: {namespaces: {}}
  ingress:
    - action: Accept
      from: [{namespaces: {}}]
      protocols:
        - tcp: {destinationPort: {number: "eighty"}}
        - udp: {destinationPort: {number: 0}}
`;
    assert.deepEqual(problems(text), {
      found: [
        ['SCHEMA_TYPE', 'spec.tier', 6],
        ['PRIORITY_INVALID', 'spec.priority', 7],
        ['SCHEMA_TYPE', 'spec.ingress[0].protocols[0].tcp.destinationPort.number', 13],
        ['PORT_OUT_OF_RANGE', 'spec.ingress[0].protocols[1].udp.destinationPort.number', 14],
      ],
      objects: 0,
    });
  });

  it('a cluster policy peer: a mistyped selector does not hide the other selector', () => {
    const text = `${ANP}spec:
  priority: 1
  subject: {namespaces: {}}
  ingress:
    - action: Allow
      from:
        - pods:
            namespaceSelector: "all"
            podSelector: {matchLabels: {"-bad": x}}
`;
    assert.deepEqual(problems(text).found, [
      ['SCHEMA_TYPE', 'spec.ingress[0].from[0].pods.namespaceSelector', 12],
      ['LABEL_KEY_INVALID', 'spec.ingress[0].from[0].pods.podSelector.matchLabels.-bad', 13],
    ]);
  });

  it('a cluster policy peer: an unknown field does not hide a bad label beside it', () => {
    // The peer shapes have no schema that drops unknown fields: they are removed before the rest is read.
    const text = `${ANP}spec:
  priority: 1
  subject: {namespaces: {}}
  ingress:
    - action: Allow
      from:
        - pods:
            namespaceSelector: {}
            podSelecter: {}
            podSelector: {matchLabels: {"-bad": x}}
`;
    assert.deepEqual(problems(text).found, [
      ['SCHEMA_UNKNOWN_FIELD', 'spec.ingress[0].from[0].pods.podSelecter', 13],
      ['LABEL_KEY_INVALID', 'spec.ingress[0].from[0].pods.podSelector.matchLabels.-bad', 14],
    ]);
  });

  it('Namespace and Node: mistyped labels do not hide a bad name or address; a stand-in is not judged', () => {
    const text = [
      'apiVersion: v1\nkind: Namespace\nmetadata: {name: Bad_Name, labels: 5}\n',
      'apiVersion: v1\nkind: Node\nmetadata: {name: Bad_Node, labels: 5}\nstatus: {addresses: [{type: InternalIP, address: 300.1.1.1}]}\n',
      // The name stood in for (empty) is not said to be invalid.
      'apiVersion: v1\nkind: Namespace\nmetadata: {labels: {a: 5}}\n',
    ].join('---\n');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'bad.yaml', text }]);
    assert.deepEqual(
      diagnostics.map((d) => [d.code, d.path, d.line]),
      [
        ['NAME_INVALID', 'metadata.name', 3],
        ['SCHEMA_TYPE', 'metadata.labels', 3],
        ['NAME_INVALID', 'metadata.name', 7],
        ['SCHEMA_TYPE', 'metadata.labels', 7],
        ['IP_INVALID', 'status.addresses[0].address', 8],
        ['SCHEMA_REQUIRED', 'metadata.name', 12],
        ['SCHEMA_TYPE', 'metadata.labels.a', 12],
      ],
    );
    // Still skipped, as every object with an error is.
    assert.equal(cluster.namespaces.size, 0);
    assert.equal(cluster.nodes.size, 0);
  });

  it('Pod: mistyped fields do not hide bad labels, ports and addresses', () => {
    const text = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: ns
  labels: {app: "-bad"}
spec:
  hostNetwork: "yes please"
  containers:
    - name: c
      ports:
        - containerPort: "http"
          protocol: tcp
        - containerPort: 70000
status:
  podIP: 10.0.0.300
`;
    assert.deepEqual(problems(text), {
      found: [
        ['LABEL_VALUE_INVALID', 'metadata.labels.app', 6],
        ['SCHEMA_TYPE', 'spec.hostNetwork', 8],
        ['SCHEMA_TYPE', 'spec.containers[0].ports[0].containerPort', 12],
        ['PROTOCOL_INVALID', 'spec.containers[0].ports[0].protocol', 13],
        ['PORT_OUT_OF_RANGE', 'spec.containers[0].ports[1].containerPort', 14],
        ['IP_INVALID', 'status.podIP', 16],
      ],
      objects: 0,
    });
  });

  it("Deployment: a mistyped template field does not hide the template's bad label", () => {
    const text = `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  template:
    metadata: {labels: {app: "-x"}}
    spec:
      hostNetwork: "no"
`;
    assert.deepEqual(problems(text).found, [
      ['LABEL_VALUE_INVALID', 'spec.template.metadata.labels.app', 6],
      ['SCHEMA_TYPE', 'spec.template.spec.hostNetwork', 8],
    ]);
  });

  it("NetworkPolicy: a mistyped port's protocol is still judged, its endPort is not said to lack a port", () => {
    const text = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: ns}
spec:
  podSelector: {}
  ingress:
    - ports:
        - {port: [80], protocol: tcp, endPort: 90}
`;
    assert.deepEqual(problems(text).found, [
      ['SCHEMA_TYPE', 'spec.ingress[0].ports[0].port', 8],
      ['PROTOCOL_INVALID', 'spec.ingress[0].ports[0].protocol', 8],
    ]);
  });

  it('a mistyped list element is stood in for in place: the other elements are still judged', () => {
    const anp = `${ANP}spec:
  priority: 1
  subject: {namespaces: {}}
  ingress: [5]
  egress:
    - action: Deny
      to: [{networks: [5, "300.0.0.0/8"]}]
`;
    assert.deepEqual(problems(anp).found, [
      // The rule standing in for 5 is not said to lack an action or peers.
      ['SCHEMA_TYPE', 'spec.ingress[0]', 8],
      ['SCHEMA_TYPE', 'spec.egress[0].to[0].networks[0]', 11],
      ['CIDR_INVALID', 'spec.egress[0].to[0].networks[1]', 11],
    ]);
    const policy = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: ns}
spec:
  podSelector: {matchExpressions: [{key: a, operator: In, values: [1, "-x"]}]}
  policyTypes: [5, Bogus]
  ingress:
    - from: [5, {ipBlock: {cidr: 10.0.0.0/8, except: [7, 11.0.0.0/8]}}]
`;
    assert.deepEqual(problems(policy).found, [
      ['SCHEMA_TYPE', 'spec.podSelector.matchExpressions[0].values[0]', 5],
      ['LABEL_VALUE_INVALID', 'spec.podSelector.matchExpressions[0].values[1]', 5],
      ['SCHEMA_TYPE', 'spec.policyTypes[0]', 6],
      ['POLICY_TYPE_INVALID', 'spec.policyTypes[1]', 6],
      // The peer standing in for 5 is not said to name no selector.
      ['SCHEMA_TYPE', 'spec.ingress[0].from[0]', 8],
      ['SCHEMA_TYPE', 'spec.ingress[0].from[1].ipBlock.except[0]', 8],
      ['EXCEPT_NOT_IN_CIDR', 'spec.ingress[0].from[1].ipBlock.except[1]', 8],
    ]);
  });

  it("hints at the kind's own field names, and names .nan as YAML writes it", () => {
    const text = `${CNP}spec:
  tier: Admin
  priorty: 5
  subject: {namespaces: {}}
  ingress:
    - action: Accept
      from: [{pods: {namespaceSelecter: {}}}]
      protocols: [{tcp: {destinationPort: {number: .nan}}}]
`;
    const { diagnostics } = loadFromTexts([{ name: 'bad.yaml', text }]);
    // Tests assert on codes; these two are about the wording itself.
    assert.deepEqual(
      diagnostics.map((d) => d.message),
      [
        'missing required field "spec.priority"',
        'unknown field "spec.priorty" (did you mean "priority"?)',
        'unknown field "spec.ingress[0].from[0].pods.namespaceSelecter" (did you mean "namespaceSelector"?)',
        '"spec.ingress[0].protocols[0].tcp.destinationPort.number" must be a number, not .nan',
      ],
    );
  });

  it('the other objects of the file are still read', () => {
    const text = [
      `${ANP}spec:\n  priority: "high"\n  subject: {namespaces: {}}\n`,
      `apiVersion: v1\nkind: Pod\nmetadata: {name: good, namespace: ns}\n`,
      `${CNP}spec:\n  tier: Admin\n  priority: 3\n  subject: {namespaces: {}}\n`,
    ].join('---\n');
    const { cluster } = loadFromTexts([{ name: 'bad.yaml', text }]);
    assert.deepEqual(
      [...cluster.endpoints.map((e) => e.name), ...cluster.clusterPolicies.map((p) => p.name)],
      ['good', 'cnp'],
    );
  });
});
