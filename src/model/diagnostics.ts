/**
 * The diagnostic catalogue: every problem Palisade reports about user input has a stable code
 * here with its severity. Tests assert on codes; messages may be reworded freely.
 */

export type Severity = 'error' | 'warning' | 'info';

export const DIAGNOSTIC_CATALOGUE = {
  // Reading input
  FILE_NOT_FOUND: { severity: 'error', summary: 'an input path does not exist' },
  FILE_UNREADABLE: { severity: 'error', summary: 'an input path could not be read' },
  FILE_TOO_LARGE: { severity: 'error', summary: 'an input file is larger than --max-file-size' },
  NO_INPUT_FILES: { severity: 'warning', summary: 'a directory holds no .yaml, .yml or .json files' },
  API_RESOURCE_ABSENT: {
    severity: 'info',
    summary: 'the cluster does not serve a kind Palisade reads (its CRD is not installed); there are none',
  },
  // Syntax
  YAML_SYNTAX: { severity: 'error', summary: 'the file is not valid YAML or JSON' },
  YAML_DUPLICATE_KEY: { severity: 'error', summary: 'a mapping has the same key twice' },
  YAML_ALIAS_LIMIT: {
    severity: 'error',
    summary: 'too many alias expansions (possible billion-laughs input)',
  },
  NOT_AN_OBJECT: {
    severity: 'warning',
    summary: 'a document is not a Kubernetes object (mapping) and was skipped',
  },
  NESTING_TOO_DEEP: {
    severity: 'error',
    summary: 'a document nests deeper than Palisade reads (256 levels); it is skipped',
  },
  DOCUMENT_TOO_LARGE: {
    severity: 'error',
    summary:
      'a document (YAML or JSON) holds more values than Palisade reads from one document (2,000,000); it is skipped',
  },
  TOO_MANY_DOCUMENTS: {
    severity: 'error',
    summary: 'a file holds more documents than Palisade reads from one file (500,000); the rest are skipped',
  },
  INVALID_UTF8: { severity: 'error', summary: 'a file is not valid UTF-8; it is skipped' },
  PROCESSING_FAILED: {
    severity: 'error',
    summary:
      "reading a file's documents or decoding an object failed unexpectedly (a fault in Palisade); that file or object is skipped, the rest are read",
  },
  CONTROL_CHARACTER: {
    severity: 'error',
    summary: 'a file holds a control character YAML does not allow (NUL, escape…); it is skipped',
  },
  FILE_EMPTY: {
    severity: 'warning',
    summary:
      'a file named on the command line (or stdin) holds no object at all: empty, or only comments and separators',
  },
  NOT_KUBERNETES: {
    severity: 'info',
    summary: 'a file found in a directory is not Kubernetes manifests (Chart.yaml, package.json…); skipped',
  },
  TEMPLATE_NOT_RENDERED: {
    severity: 'warning',
    summary: 'a file is a template (Helm, Go templates: {{ }}); render it first (helm template); skipped',
  },
  DIAGNOSTICS_TRUNCATED: {
    severity: 'warning',
    summary: 'more diagnostics of one code in one file than are listed (1,000); the rest are counted',
  },
  // Structure
  SCHEMA_REQUIRED: { severity: 'error', summary: 'a required field is missing' },
  SCHEMA_TYPE: { severity: 'error', summary: 'a field has the wrong type' },
  SCHEMA_UNKNOWN_FIELD: {
    severity: 'error',
    summary: 'a field is not part of the API (kubectl --validate=strict rejects it)',
  },
  KIND_SKIPPED: { severity: 'info', summary: 'an object of a kind Palisade does not analyse was skipped' },
  API_VERSION_UNKNOWN: {
    severity: 'error',
    summary: 'a known kind with an apiVersion Palisade does not know',
  },
  OBJECT_DUPLICATE: { severity: 'warning', summary: 'the same object is defined twice; the later one wins' },
  NAME_INVALID: {
    severity: 'error',
    summary: 'an object name, namespace or node name is not a valid DNS name',
  },
  // Labels and selectors
  LABEL_KEY_INVALID: { severity: 'error', summary: 'a label key is not valid' },
  LABEL_VALUE_INVALID: { severity: 'error', summary: 'a label value is not valid' },
  SELECTOR_OPERATOR_INVALID: {
    severity: 'error',
    summary: 'a matchExpressions operator is not In, NotIn, Exists or DoesNotExist',
  },
  SELECTOR_VALUES_REQUIRED: { severity: 'error', summary: 'In and NotIn need at least one value' },
  SELECTOR_VALUES_FORBIDDEN: { severity: 'error', summary: 'Exists and DoesNotExist take no values' },
  // Ports and protocols
  PROTOCOL_INVALID: { severity: 'error', summary: 'protocol is not TCP, UDP or SCTP' },
  PORT_OUT_OF_RANGE: { severity: 'error', summary: 'a port number is outside 1-65535' },
  PORT_NAME_INVALID: { severity: 'error', summary: 'a named port is not a valid IANA service name' },
  END_PORT_WITHOUT_NUMERIC_PORT: { severity: 'error', summary: 'endPort needs a numeric port' },
  END_PORT_BEFORE_PORT: { severity: 'error', summary: 'endPort is smaller than port' },
  PORT_NOT_INTEGER: {
    severity: 'error',
    summary:
      'a port is written as a float, in hex or with an exponent (80.0, 0x50, 8e1); the API server takes decimal integers',
  },
  // Peers and CIDRs
  PEER_EMPTY: { severity: 'error', summary: 'a peer names none of podSelector, namespaceSelector, ipBlock' },
  PEER_IPBLOCK_WITH_SELECTOR: {
    severity: 'error',
    summary: 'ipBlock cannot be combined with a selector in one peer',
  },
  CIDR_INVALID: { severity: 'error', summary: 'a CIDR does not parse, or uses a form Kubernetes rejects' },
  CIDR_HOST_BITS: { severity: 'warning', summary: 'a CIDR has host bits set; they are masked off' },
  CIDR_NON_CANONICAL: { severity: 'info', summary: 'an IPv6 address is not written in canonical form' },
  EXCEPT_NOT_IN_CIDR: { severity: 'error', summary: 'an except entry is not a strict subset of its cidr' },
  IP_INVALID: { severity: 'error', summary: 'a pod or host IP does not parse' },
  POD_IP_SHARED: {
    severity: 'warning',
    summary: 'two running pods (not hostNetwork) have the same IP; traffic to it cannot be told apart',
  },
  // Policy types
  POLICY_TYPE_INVALID: {
    severity: 'error',
    summary: 'policyTypes holds something other than Ingress or Egress',
  },
  POLICY_TYPE_DUPLICATE: { severity: 'error', summary: 'policyTypes names the same type twice' },
  // Cluster assembly and semantics
  NAMESPACE_IMPLICIT: {
    severity: 'info',
    summary: 'a referenced namespace was not defined and was created with only its name label',
  },
  LEGACY_ANNOTATION_IGNORED: {
    severity: 'warning',
    summary: 'the v1beta1 DefaultDeny annotation has no effect under v1 semantics',
  },
  LEGACY_ANNOTATION_INVALID: {
    severity: 'warning',
    summary: 'the v1beta1 network-policy annotation is not valid JSON of the expected shape and is ignored',
  },
  LEGACY_EGRESS_IGNORED: {
    severity: 'warning',
    summary: 'egress rules have no effect under the v1beta1 proposal semantics',
  },
  // convert --to v1
  CONVERT_DEFAULT_DENY: {
    severity: 'info',
    summary: 'a DefaultDeny namespace annotation became a default-deny-ingress policy',
  },
  CONVERT_POLICY_DROPPED: {
    severity: 'warning',
    summary:
      'a policy with no effect under the proposal was left out, because under v1 it would isolate pods',
  },
  CONVERT_RULE_DROPPED: {
    severity: 'info',
    summary: 'a rule with an empty from or ports list matched nothing under the proposal and was left out',
  },
  CONVERT_CLUSTER_POLICY: {
    severity: 'info',
    summary: 'an AdminNetworkPolicy or BaselineAdminNetworkPolicy became a ClusterNetworkPolicy',
  },
  CONVERT_NOT_EXPRESSIBLE: {
    severity: 'warning',
    summary:
      'a policy uses something the target API cannot express (sameLabels, an unreadable peer) and was left as it is',
  },
  POD_NOT_RUNNING: { severity: 'info', summary: 'a pod in phase Succeeded or Failed was left out' },
  NAMESPACE_NOT_IN_INPUT: {
    severity: 'warning',
    summary: 'a namespace named on the command line (-n) has nothing in the input',
  },
  // AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy
  PRIORITY_INVALID: { severity: 'error', summary: 'priority is not an integer between 0 and 1000' },
  TIER_INVALID: { severity: 'error', summary: 'a ClusterNetworkPolicy tier is not Admin or Baseline' },
  ACTION_INVALID: { severity: 'error', summary: 'a rule action is not one its API allows' },
  SUBJECT_INVALID: { severity: 'error', summary: 'a subject must set exactly one of namespaces and pods' },
  PEER_INVALID: {
    severity: 'error',
    summary: 'a cluster policy peer sets more than one field, or one its direction does not allow',
  },
  PEER_FAIL_CLOSED: {
    severity: 'warning',
    summary:
      'a peer has no field Palisade knows (newer API?); its rule fails closed: Allow matches nothing, Deny and Pass deny all',
  },
  PEER_SHAPE_DEPRECATED: {
    severity: 'warning',
    summary: 'a peer uses the v0.1.1 shape (namespaceSelector, sameLabels, notSameLabels); still understood',
  },
  API_LIMIT_EXCEEDED: {
    severity: 'error',
    summary: 'more rules, peers, ports or characters than the API allows',
  },
  CLUSTER_PORT_INVALID: {
    severity: 'error',
    summary: 'a cluster policy port or protocol entry sets none or several of its fields, or a bad range',
  },
  NAMED_PORT_NON_POD_PEER: {
    severity: 'error',
    summary: 'a named port cannot be used with networks, nodes or domainNames peers',
  },
  DOMAIN_NAME_INVALID: {
    severity: 'error',
    summary: 'a domainNames entry is not a domain name, or is used by a rule that is not Accept',
  },
  BANP_NAME_NOT_DEFAULT: {
    severity: 'error',
    summary: 'the single BaselineAdminNetworkPolicy must be named "default"',
  },
  DOMAIN_NAMES_NOT_ENFORCED: {
    severity: 'warning',
    summary:
      'a datapath that cannot resolve names matches nothing for a domainNames peer: the rule never allows there',
  },
  PRIORITY_TIE: {
    severity: 'warning',
    summary:
      'policies of one tier share a priority and select common pods; the API leaves their order open (Palisade orders them by a hash of Kind/name)',
  },
  SELECTOR_SYNTAX: {
    severity: 'error',
    summary:
      "a Calico selector does not parse (located at the column of the mistake: `app = 'x'`, an unclosed string, a missing operator)",
  },
  SELECTOR_TOO_COMPLEX: {
    severity: 'error',
    summary:
      'a Calico selector expands to more than 256 alternatives (its ||s multiplied out); split the policy',
  },
  TIER_UNDEFINED: {
    severity: 'warning',
    summary:
      'a Calico policy names a tier the input does not define; assumed to exist with no order (after every other tier) and default action Deny',
  },
  TIER_ORDER_FIXED: {
    severity: 'warning',
    summary:
      'a Tier object gives the default, kube-admin or kube-baseline tier another order or default action than Calico fixes; Calico’s is used',
  },
  RULE_INVALID: {
    severity: 'error',
    summary:
      'a Calico or Cilium rule breaks its API’s validation (ports without a protocol, IPv4 and IPv6 blocks in one rule, an unknown entity, …)',
  },
  RULE_NOT_ANALYSED: {
    severity: 'warning',
    summary:
      'part of a Calico or Cilium rule Palisade does not analyse (L7, toFQDNs, toServices, toGroups, source ports, …): the message says what is assumed instead',
  },
  POLICY_NOT_ANALYSED: {
    severity: 'warning',
    summary:
      'a Calico or Cilium policy Palisade cannot analyse as a whole (host endpoint policy: nodeSelector, doNotTrack, preDNAT, applyOnForward); it is left out',
  },
  POLICY_KIND_NOT_EVALUATED: {
    severity: 'warning',
    summary:
      "an object holds network policy of an engine Palisade does not evaluate (Antrea's, OVN's, Istio's AuthorizationPolicy, …); answers do not include it",
  },
  POLICY_STAGED: {
    severity: 'info',
    summary:
      'a policy is marked staged (palisade.dev/staged): it is not enforced and answers leave it out; the agent evaluates it against flows',
  },
  STAGED_VALUE_INVALID: {
    severity: 'warning',
    summary:
      'the palisade.dev/staged annotation is neither "true" nor "false"; the policy is taken as staged',
  },
  POLICY_ENGINES_MIXED: {
    severity: 'warning',
    summary:
      'the input holds both Calico and Cilium policy; a cluster enforces one of them, Palisade evaluates both (docs/CALICO-CILIUM.md says how they combine)',
  },
  INGRESS_BACKEND_NOT_ANALYSED: {
    severity: 'warning',
    summary:
      'an Ingress or Route backend that is not a Service (a resource backend, a Route to another kind); the ingress controller is taken to reach nothing through it',
  },
  INGRESS_SERVICE_UNKNOWN: {
    severity: 'warning',
    summary:
      'an Ingress or Route names a Service the input does not have, or a port that Service does not have; the ingress controller is taken to reach nothing through that backend',
  },
  SELECTOR_KEY_IGNORED: {
    severity: 'warning',
    summary:
      'a selector names a label its policy kind ignores (io.cilium.k8s.namespace.labels in a CiliumNetworkPolicy); it is left out, as Cilium does',
  },
  // Flow files (NDJSON of flow records) and what they name
  FLOW_FIELD_INVALID: {
    severity: 'error',
    summary:
      'a flow record is not an object, or a field holds a value flow records do not have (verdict, pod name, count); the line is skipped',
  },
  FLOW_FIELD_UNKNOWN: {
    severity: 'warning',
    summary:
      'a flow record has a field Palisade does not know (a newer producer?); it is ignored, the record is read',
  },
  FLOW_ENDPOINT_UNKNOWN: {
    severity: 'warning',
    summary: 'a flow (or an expected connection) names a pod the cluster does not have; it is left out',
  },
} as const satisfies Record<string, { severity: Severity; summary: string }>;

export type DiagnosticCode = keyof typeof DIAGNOSTIC_CATALOGUE;

export interface Diagnostic {
  readonly code: DiagnosticCode;
  readonly severity: Severity;
  readonly message: string;
  /** Input file, `<stdin>`, or `<cli>` for problems in command-line arguments. */
  readonly file: string;
  /** 1-based; 0 when the problem concerns the whole file. */
  readonly line: number;
  readonly column: number;
  /** `Kind ns/name` of the object concerned, when known. */
  readonly object?: string;
  /** Dotted field path inside the object (`spec.ingress[0].from[1]`), when known. */
  readonly path?: string;
}

export function makeDiagnostic(
  code: DiagnosticCode,
  message: string,
  where: { file: string; line?: number; column?: number; object?: string; path?: string },
): Diagnostic {
  return {
    code,
    severity: DIAGNOSTIC_CATALOGUE[code].severity,
    message: shortenQuoted(message),
    file: where.file,
    line: where.line ?? 0,
    column: where.column ?? 0,
    ...(where.object !== undefined ? { object: shortened(where.object, IDENTITY_MAX) } : {}),
    ...(where.path !== undefined ? { path: shortened(where.path, IDENTITY_MAX) } : {}),
  };
}

/*
 * Messages quote the input, and hostile input holds megabytes in one name or label value: a
 * diagnostic shows the start of such a value and its length, never all of it (a 20 MB label
 * value made a 20 MB line on the terminal).
 */
const QUOTED_MAX = 120;
const QUOTED_SHOWN = 60;
const MESSAGE_MAX = 2000;
const IDENTITY_MAX = 300;

/** `text` with every quoted value longer than QUOTED_MAX cut to its start and its length. */
function shortenQuoted(text: string): string {
  if (text.length <= QUOTED_MAX) return text;
  // A scan, not a regular expression: one over a 20 MB value overflows the regexp stack.
  let out = '';
  let from = 0;
  for (let open = text.indexOf('"'); open >= 0; open = text.indexOf('"', from)) {
    const close = text.indexOf('"', open + 1);
    if (close < 0) break;
    const length = close - open - 1;
    out += text.slice(from, open + 1);
    out +=
      length > QUOTED_MAX
        ? `${text.slice(open + 1, open + 1 + QUOTED_SHOWN)}…" (${length.toLocaleString('en-US')} characters)`
        : text.slice(open + 1, close + 1);
    from = close + 1;
  }
  return shortened(out + text.slice(from), MESSAGE_MAX);
}

function shortened(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}… (${text.length.toLocaleString('en-US')} characters)`;
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}

/** Orders diagnostics by file, line, column, then code, so output is stable. */
export function sortDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  return [...diagnostics].sort(
    (a, b) =>
      (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
      a.line - b.line ||
      a.column - b.column ||
      (a.code < b.code ? -1 : a.code > b.code ? 1 : 0),
  );
}
