/**
 * Every kind of bad input gets its stable code at the right line and column, and never stops the
 * rest of the input from being analysed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { itReportsEach, type DiagnosticCase } from '../helpers/diagnostic-cases.ts';

const policy = (spec: string): string =>
  `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: p
  namespace: ns
spec:
${spec}`;

// Lines 1-6 are the policy header; spec content starts on line 7.
const CASES: DiagnosticCase[] = [
  { name: 'YAML syntax error', text: 'a: [1, 2\nb: 3\n', code: 'YAML_SYNTAX', line: 2, column: 1 },
  { name: 'duplicate key', text: 'kind: Pod\nkind: Pod\n', code: 'YAML_DUPLICATE_KEY', line: 2, column: 1 },
  { name: 'document that is not an object', text: '- a\n- b\n', code: 'NOT_AN_OBJECT', line: 1, column: 1 },
  {
    name: 'missing kind',
    text: 'apiVersion: v1\nmetadata: {name: x}\n',
    code: 'SCHEMA_REQUIRED',
    line: 1,
    column: 1,
  },
  {
    name: 'unknown field (typo) in a peer',
    text: policy('  podSelector: {}\n  ingress:\n    - from:\n        - podSelecter: {}\n'),
    code: 'SCHEMA_UNKNOWN_FIELD',
    line: 10,
    column: 11,
    path: 'spec.ingress[0].from[0].podSelecter',
  },
  {
    name: 'label value of the wrong type',
    text: policy('  podSelector:\n    matchLabels:\n      version: 2\n'),
    code: 'SCHEMA_TYPE',
    line: 9,
    column: 16,
  },
  {
    name: 'YAML 1.1 boolean where a string is needed',
    text: policy('  podSelector:\n    matchLabels:\n      enabled: yes\n'),
    code: 'SCHEMA_TYPE',
    line: 9,
    column: 16,
  },
  {
    name: 'invalid label key',
    text: policy('  podSelector:\n    matchLabels:\n      "bad key": x\n'),
    code: 'LABEL_KEY_INVALID',
    line: 9,
    column: 7,
  },
  {
    name: 'invalid label value',
    text: policy('  podSelector:\n    matchLabels:\n      app: "-web"\n'),
    code: 'LABEL_VALUE_INVALID',
    line: 9,
    column: 12,
  },
  {
    name: 'unknown operator',
    text: policy(
      '  podSelector:\n    matchExpressions:\n      - {key: app, operator: Equals, values: [a]}\n',
    ),
    code: 'SELECTOR_OPERATOR_INVALID',
    line: 9,
    column: 30,
  },
  {
    name: 'In without values',
    text: policy('  podSelector:\n    matchExpressions:\n      - {key: app, operator: In}\n'),
    code: 'SELECTOR_VALUES_REQUIRED',
    line: 9,
    column: 30,
  },
  {
    name: 'Exists with values',
    text: policy(
      '  podSelector:\n    matchExpressions:\n      - {key: app, operator: Exists, values: [a]}\n',
    ),
    code: 'SELECTOR_VALUES_FORBIDDEN',
    line: 9,
    column: 46,
  },
  {
    name: 'port out of range',
    text: policy('  podSelector: {}\n  ingress:\n    - ports:\n        - port: 70000\n'),
    code: 'PORT_OUT_OF_RANGE',
    line: 10,
    column: 17,
  },
  {
    name: 'named port that is not an IANA service name',
    text: policy('  podSelector: {}\n  ingress:\n    - ports:\n        - port: web--http\n'),
    code: 'PORT_NAME_INVALID',
    line: 10,
    column: 17,
  },
  {
    name: 'numeric string as a port',
    text: policy('  podSelector: {}\n  ingress:\n    - ports:\n        - port: "80"\n'),
    code: 'PORT_NAME_INVALID',
    line: 10,
    column: 17,
  },
  {
    name: 'endPort with a named port',
    text: policy('  podSelector: {}\n  ingress:\n    - ports:\n        - {port: http, endPort: 90}\n'),
    code: 'END_PORT_WITHOUT_NUMERIC_PORT',
    line: 10,
    column: 33,
  },
  {
    name: 'endPort below port',
    text: policy('  podSelector: {}\n  egress:\n    - ports:\n        - {port: 90, endPort: 80}\n'),
    code: 'END_PORT_BEFORE_PORT',
    line: 10,
    column: 31,
  },
  {
    name: 'lower-case protocol',
    text: policy('  podSelector: {}\n  ingress:\n    - ports:\n        - {protocol: udp, port: 53}\n'),
    code: 'PROTOCOL_INVALID',
    line: 10,
    column: 22,
  },
  {
    name: 'empty peer',
    text: policy('  podSelector: {}\n  ingress:\n    - from:\n        - {}\n'),
    code: 'PEER_EMPTY',
    line: 10,
    column: 11,
  },
  {
    name: 'ipBlock together with a selector',
    text: policy(
      '  podSelector: {}\n  ingress:\n    - from:\n        - podSelector: {}\n          ipBlock: {cidr: 10.0.0.0/8}\n',
    ),
    code: 'PEER_IPBLOCK_WITH_SELECTOR',
    line: 11,
    column: 11,
  },
  {
    name: 'invalid CIDR',
    text: policy('  podSelector: {}\n  egress:\n    - to:\n        - ipBlock: {cidr: 10.0.0.0/40}\n'),
    code: 'CIDR_INVALID',
    line: 10,
    column: 27,
  },
  {
    name: 'CIDR with a leading zero',
    text: policy('  podSelector: {}\n  egress:\n    - to:\n        - ipBlock: {cidr: 010.0.0.0/8}\n'),
    code: 'CIDR_INVALID',
    line: 10,
    column: 27,
  },
  {
    name: 'CIDR with host bits set',
    text: policy('  podSelector: {}\n  egress:\n    - to:\n        - ipBlock: {cidr: 10.0.0.1/8}\n'),
    code: 'CIDR_HOST_BITS',
    line: 10,
    column: 27,
  },
  {
    name: 'except outside its cidr',
    text: policy(
      '  podSelector: {}\n  egress:\n    - to:\n        - ipBlock: {cidr: 10.0.0.0/8, except: [11.0.0.0/16]}\n',
    ),
    code: 'EXCEPT_NOT_IN_CIDR',
    line: 10,
    column: 48,
  },
  {
    name: 'except equal to its cidr',
    text: policy(
      '  podSelector: {}\n  egress:\n    - to:\n        - ipBlock: {cidr: 10.0.0.0/8, except: [10.0.0.0/8]}\n',
    ),
    code: 'EXCEPT_NOT_IN_CIDR',
    line: 10,
    column: 48,
  },
  {
    name: 'unknown policy type',
    text: policy('  podSelector: {}\n  policyTypes: [Ingress, Outgress]\n'),
    code: 'POLICY_TYPE_INVALID',
    line: 8,
    column: 26,
  },
  {
    name: 'duplicate policy type',
    text: policy('  podSelector: {}\n  policyTypes: [Ingress, Ingress]\n'),
    code: 'POLICY_TYPE_DUPLICATE',
    line: 8,
    column: 26,
  },
  {
    name: 'unknown NetworkPolicy apiVersion',
    text: 'apiVersion: networking.k8s.io/v2\nkind: NetworkPolicy\nmetadata: {name: p}\nspec: {}\n',
    code: 'API_VERSION_UNKNOWN',
    line: 1,
    column: 13,
  },
  {
    name: 'invalid object name',
    text: 'apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\n',
    code: 'NAME_INVALID',
    line: 3,
    column: 18,
  },
  {
    name: 'invalid pod IP',
    text: 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus:\n  podIP: 10.0.0.300\n',
    code: 'IP_INVALID',
    line: 5,
    column: 10,
  },
  {
    name: 'invalid DefaultDeny annotation',
    text: 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  annotations:\n    net.beta.kubernetes.io/network-policy: "{not json"\n',
    code: 'LEGACY_ANNOTATION_INVALID',
    line: 6,
    column: 44,
  },
  {
    name: 'unsupported kind',
    text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n',
    code: 'KIND_SKIPPED',
    line: 1,
    column: 1,
  },
];

describe('diagnostics for bad input', () => {
  itReportsEach(CASES, 'bad.yaml');

  it('names a skipped object as its kind is scoped: no namespace for a ClusterRole', () => {
    const text = [
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n',
    ].join('---\n');
    const objects = loadFromTexts([{ name: 'install.yaml', text }]).diagnostics.map((d) => d.object);
    assert.deepEqual(objects, ['ClusterRole reader', 'ConfigMap default/c']);
  });

  it('reports every problem of one policy at once, including after an unknown field', () => {
    const text = policy(
      '  podSelector: {}\n  ingress:\n    - form: []\n      ports:\n        - {port: 0}\n        - {protocol: tcp}\n',
    );
    const codes = loadFromTexts([{ name: 'bad.yaml', text }]).diagnostics.map((d) => d.code);
    assert.deepEqual(codes.sort(), ['PORT_OUT_OF_RANGE', 'PROTOCOL_INVALID', 'SCHEMA_UNKNOWN_FIELD']);
  });

  it("reports a policy's type errors and its other problems in one round, not what leaving a field out implies", () => {
    const text = policy(
      [
        '  podSelector: []',
        '  policyTypes: Ingress',
        '  ingress:',
        '    - from: {podSelector: {}}',
        '      ports:',
        '        - port: 70000',
        '        - {port: 100, endPort: 50}',
        '        - {port: [80], endPort: 90}',
        '',
      ].join('\n'),
    );
    const { cluster, diagnostics } = loadFromTexts([{ name: 'bad.yaml', text }]);
    assert.deepEqual(
      diagnostics.map((d) => [d.code, d.path]),
      [
        ['SCHEMA_TYPE', 'spec.podSelector'],
        ['SCHEMA_TYPE', 'spec.policyTypes'],
        ['SCHEMA_TYPE', 'spec.ingress[0].from'],
        ['PORT_OUT_OF_RANGE', 'spec.ingress[0].ports[0].port'],
        ['END_PORT_BEFORE_PORT', 'spec.ingress[0].ports[1].endPort'],
        // ports[2]'s endPort is not said to lack a port: its port is there, of the wrong type.
        ['SCHEMA_TYPE', 'spec.ingress[0].ports[2].port'],
      ],
    );
    assert.equal(cluster.policies.length, 0, 'the object is still skipped');
    // A peer whose only selector is mistyped is not said to name none.
    const peer = policy('  podSelector: {}\n  ingress:\n    - from:\n        - podSelector: "app=web"\n');
    assert.deepEqual(
      loadFromTexts([{ name: 'bad.yaml', text: peer }]).diagnostics.map((d) => d.code),
      ['SCHEMA_TYPE'],
    );
  });

  it('reports an invalid label key and its invalid value together, as the API server does', () => {
    const text = policy('  podSelector:\n    matchLabels:\n      "-bad": "x y"\n');
    const found = loadFromTexts([{ name: 'bad.yaml', text }]).diagnostics.map((d) => [
      d.code,
      d.line,
      d.column,
    ]);
    assert.deepEqual(found, [
      ['LABEL_KEY_INVALID', 9, 7],
      ['LABEL_VALUE_INVALID', 9, 15],
    ]);
  });

  it('places a string never closed at its opening quote, once, in YAML and in JSON', () => {
    for (const [text, line, column] of [
      ['apiVersion: v1\nkind: Pod\nmetadata:\n  name: "a\n  namespace: default\n', 4, 9],
      ["kind: Pod\nmetadata:\n  name: 'don''t\n", 3, 9],
      ['{"kind": "Pod", "metadata": {"name": "a}\n', 1, 38],
    ] as const) {
      const diagnostics = loadFromTexts([{ name: 'bad.yaml', text }]).diagnostics;
      assert.deepEqual(
        diagnostics.map((d) => [d.code, d.line, d.column]),
        [['YAML_SYNTAX', line, column]],
        text,
      );
      assert.match(diagnostics[0]?.message ?? '', /never closed/);
    }
  });

  it('reads the documents after a string never closed (the parser would run it on across ---)', () => {
    const namespace = (name: string): string =>
      `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${name}}\n`;
    const text = [
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "a\n',
      namespace('after-double'),
      "kind: Pod\nmetadata:\n  name: 'b\n",
      namespace('after-single'),
    ].join('---\n');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'bad.yaml', text }]);
    assert.deepEqual(
      diagnostics.map((d) => [d.code, d.line, d.column]),
      [
        ['YAML_SYNTAX', 4, 9],
        ['YAML_SYNTAX', 12, 9],
      ],
    );
    assert.deepEqual([...cluster.namespaces.keys()], ['after-double', 'after-single']);
  });

  it('reports a key repeated before a syntax error too, and none the parser only guessed at after it', () => {
    for (const [text, expected] of [
      // before an unclosed flow map, a never-closed string, a plain syntax error: both reported
      [
        'kind: Pod\nmetadata:\n  name: a\n  name: b\n  labels: {x: 1\nspec: {}\n',
        [
          ['YAML_DUPLICATE_KEY', 4, 3],
          ['YAML_SYNTAX', 6, 1],
        ],
      ],
      [
        'kind: Pod\nmetadata:\n  name: a\n  name: b\n  labels:\n    x: "open\n',
        [
          ['YAML_DUPLICATE_KEY', 4, 3],
          ['YAML_SYNTAX', 6, 8],
        ],
      ],
      [
        'kind: Pod\nkind: Pod\nmetadata: a: b\n',
        [
          ['YAML_DUPLICATE_KEY', 2, 1],
          ['YAML_SYNTAX', 3, 11],
        ],
      ],
      // after the { left open the parser reads `name: b` into the flow map: not a finding
      ['kind: Pod\nmetadata:\n  name: a\n  labels: {x: 1\n  name: b\nspec: {}\n', [['YAML_SYNTAX', 5, 3]]],
    ] as const) {
      const diagnostics = loadFromTexts([{ name: 'bad.yaml', text }]).diagnostics;
      assert.deepEqual(
        diagnostics.map((d) => [d.code, d.line, d.column]),
        expected,
        text,
      );
    }
  });

  it('refuses an IPv4-mapped IPv6 CIDR once, without a canonical-form note that points elsewhere', () => {
    const text = policy(
      '  podSelector: {}\n  egress:\n    - to:\n        - ipBlock: {cidr: "::ffff:10.0.0.0/104"}\n',
    );
    const codes = loadFromTexts([{ name: 'bad.yaml', text }]).diagnostics.map((d) => d.code);
    assert.deepEqual(codes, ['CIDR_INVALID']);
  });

  it('skips the broken object and analyses the rest', () => {
    const text = [
      policy('  podSelector: {}\n  ingress:\n    - from: [{}]\n'),
      policy('  podSelector: {}\n').replace('name: p', 'name: good'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns}\n',
      'a: [',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: after, namespace: ns}\n',
    ].join('\n---\n');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'mixed.yaml', text }]);
    assert.deepEqual(
      cluster.policies.map((p) => p.name),
      ['good'],
    );
    assert.deepEqual(
      cluster.endpoints.map((e) => e.id),
      ['ns/after', 'ns/web'],
    );
    assert.ok(diagnostics.some((d) => d.code === 'PEER_EMPTY'));
    assert.ok(diagnostics.some((d) => d.code === 'YAML_SYNTAX'));
  });

  it('suggests the field a typo meant', () => {
    const text = policy('  podSelector: {}\n  ingress:\n    - form: []\n');
    const d = loadFromTexts([{ name: 'bad.yaml', text }]).diagnostics[0];
    assert.equal(d?.code, 'SCHEMA_UNKNOWN_FIELD');
    assert.match(d?.message ?? '', /did you mean "from"\?/);
  });

  it('rejects unknown metadata fields (a `lables:` typo), with the field meant; the rest is analysed', () => {
    // kubectl rejects them; read silently, the pod would have no labels and every answer about it
    // would be wrong without a word.
    const text = [
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\n  namespace: ns\n  lables: {app: web}\n',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns}\nspec:\n  template:\n    metadata: {labls: {app: d}}\n',
      'apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c, namespace: ns}\nspec:\n  jobTemplate: {spec: {template: {metadata: {label: {}}}}}\n',
      policy('  podSelector: {}\n').replace('name: p', 'name: p\n  annotation: {}'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: good\n  namespace: ns\n  uid: "1"\n  generateName: good-\n  resourceVersion: "5"\n  creationTimestamp: null\n  labels: {app: web}\n  annotations: {}\n  finalizers: []\n  managedFields: []\n',
    ].join('---\n');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'meta.yaml', text }]);
    assert.deepEqual(
      diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.line}:${d.column} ${d.message}`),
      [
        '6:3 unknown field "metadata.lables" (did you mean "labels"?)',
        '13:16 unknown field "spec.template.metadata.labls" (did you mean "labels"?)',
        '19:46 unknown field "spec.jobTemplate.spec.template.metadata.label" (did you mean "labels"?)',
        '25:3 unknown field "metadata.annotation" (did you mean "annotations"?)',
      ],
    );
    assert.deepEqual(
      cluster.endpoints.map((e) => e.id),
      ['ns/good'],
    );
    assert.deepEqual(cluster.policies, []);
  });

  it('calls a label map of the wrong type a mapping, as every other one (not zod\'s "record")', () => {
    const text = [
      policy('  podSelector: {matchLabels: [app]}\n'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, labels: 5}\n',
    ].join('---\n');
    const { diagnostics } = loadFromTexts([{ name: 'labels.yaml', text }]);
    assert.deepEqual(
      diagnostics.map((d) => `${d.line}:${d.column} ${d.message}`),
      [
        '7:30 "spec.podSelector.matchLabels" must be a mapping, not a list',
        '11:44 "metadata.labels" must be a mapping, not the number 5',
      ],
    );
  });

  it('says a tab that indents a line once, at the tab, and not a tab in a block scalar', () => {
    const found = (text: string): string[] =>
      loadFromTexts([{ name: 'tab.yaml', text }]).diagnostics.map(
        (d) => `${d.code} ${d.line}:${d.column} ${d.message}`,
      );
    // inside a flow sequence; after a sequence's dash (the parser said three things for each)
    assert.deepEqual(found('a:\n  b: [\n\t  "x",\n  ]\n'), [
      'YAML_SYNTAX 3:1 line 3 is indented with a tab; YAML allows only spaces',
    ]);
    assert.deepEqual(found('kind: List\nitems:\n-\tkind: Namespace\n  metadata: {name: a}\n'), [
      'YAML_SYNTAX 3:2 line 3 is indented with a tab; YAML allows only spaces',
    ]);
    // The tab is the text of the block scalar; the mistake is the bracket.
    assert.deepEqual(found('data: |\n  \tfoo\nbad: [\n'), [
      'YAML_SYNTAX 3:7 Flow sequence in block collection must be sufficiently indented and end with a ]',
    ]);
    // A tab on a blank or comment line is allowed; the mistake is the brace on the next line.
    for (const blank of ['\t', '\t# a note', ' \t  '])
      assert.deepEqual(found(`kind: Namespace\nmetadata:\n  name: a\n${blank}\n  labels: {a: b\n`), [
        'YAML_SYNTAX 5:16 Flow map in block collection must be sufficiently indented and end with a }',
      ]);
  });

  it('reports documents nested too deeply instead of crashing', () => {
    const text = `a: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`;
    const [d] = loadFromTexts([{ name: 'deep.yaml', text }]).diagnostics;
    assert.equal(d?.code, 'NESTING_TOO_DEEP');
    assert.deepEqual([d?.line, d?.column], [1, 258]); // the mapping, its value, 255 brackets
    assert.match(d?.message ?? '', /deeper than 256 levels/);
  });

  it('stops alias bombs', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 8; i++)
      lines.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(', ')}]`,
      );
    const { diagnostics } = loadFromTexts([{ name: 'bomb.yaml', text: lines.join('\n') + '\n' }]);
    assert.deepEqual(
      diagnostics.map((d) => d.code),
      ['YAML_ALIAS_LIMIT'],
    );
  });

  it('quotes a Calico net that is no address as written (a bare address is read as its /32 or /128)', () => {
    const text = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: nets, namespace: ns}
spec:
  selector: all()
  ingress: [{action: Allow, source: {nets: [nonsense, 10.0.0.5]}}]
`;
    const { diagnostics, cluster } = loadFromTexts([{ name: 'nets.yaml', text }]);
    assert.deepEqual(
      diagnostics.filter((d) => d.severity !== 'info').map((d) => [d.code, d.message, d.line, d.column]),
      [['CIDR_INVALID', '"nonsense" is not a valid IP address or CIDR', 6, 45]],
    );
    // Named as Calico's, not as a Kubernetes NetworkPolicy of the same name.
    assert.deepEqual(
      diagnostics.map((d) => d.object),
      ['NetworkPolicy.projectcalico.org ns/nets'],
    );
    assert.equal(cluster.clusterPolicies.length, 0);
    // A bare address with a known mistake is told as a CIDR's would be.
    const octal = loadFromTexts([{ name: 'nets.yaml', text: text.replace('nonsense', '010.0.0.1') }]);
    assert.match(octal.diagnostics[0]?.message ?? '', /"010\.0\.0\.1" has leading zeros/);
    const valid = loadFromTexts([{ name: 'nets.yaml', text: text.replace('nonsense, ', '') }]);
    const [rule] = valid.cluster.clusterPolicies[0]?.ingress ?? [];
    assert.deepEqual(
      rule?.peers.flatMap((p) => ('cidrs' in p ? p.cidrs.map((c) => c.text) : [])),
      ['10.0.0.5/32'],
    );
  });
});
