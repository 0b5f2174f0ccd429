/**
 * The lint catalogue: every check has a stable code, a severity, a summary and a fix hint.
 * `error`: the policy certainly does not do what it says (rules that can never apply);
 * `warning`: probably a mistake, or a risk; `info`: a fact about the cluster's posture. Like the diagnostic codes, codes are a contract (CI configurations select them by name):
 * never rename or remove one. docs/LINT.md documents each; a test holds the two equal.
 */
import { DIAGNOSTIC_CATALOGUE, type DiagnosticCode, type Severity } from '../../model/diagnostics.ts';

interface CatalogueEntry {
  readonly severity: Severity;
  readonly summary: string;
  readonly hint: string;
}

export const LINT_CATALOGUE = {
  POLICY_SELECTS_NOTHING: {
    severity: 'warning',
    summary: 'a policy (or a cluster policy subject) selects no pod or workload of the input',
    hint: "compare the selector with the workloads' pod template labels, or delete the policy",
  },
  PEER_MATCHES_NOTHING: {
    severity: 'warning',
    summary: 'a peer selects no pod, workload, namespace or node of the input',
    hint: 'check the labels (namespaces need a Namespace object in the input for labels other than kubernetes.io/metadata.name)',
  },
  RULES_IGNORED_BY_POLICY_TYPES: {
    severity: 'error',
    summary: 'a policy has ingress or egress rules but policyTypes omits that direction, so they are ignored',
    hint: 'add the direction to policyTypes, or delete the rules',
  },
  NAMED_PORT_UNRESOLVED: {
    severity: 'warning',
    summary:
      'a named port is a container port of none of the pods it applies to, so the rule allows nothing there',
    hint: 'use the name the containers declare (or the port number)',
  },
  NAMED_PORT_WRONG_PROTOCOL: {
    severity: 'error',
    summary: "a named port is declared by the pods only with another protocol than the rule's",
    hint: "set the rule's protocol to the one the containers declare (TCP is the default)",
  },
  PORT_PROTOCOL_MISMATCH: {
    severity: 'warning',
    summary: 'a port of a UDP service (DNS, NTP, syslog…) is allowed over TCP only',
    hint: 'add the same port with protocol: UDP',
  },
  POLICY_REDUNDANT: {
    severity: 'warning',
    summary:
      'other policies already allow every connection a policy allows, and isolate every endpoint it selects: removing it changes nothing',
    hint: 'delete the policy, or narrow the others if it was meant to be the only one',
  },
  RULE_REDUNDANT: {
    severity: 'warning',
    summary: 'other rules already allow every connection a rule allows, for every endpoint it applies to',
    hint: 'delete the rule',
  },
  RULE_SHADOWED: {
    severity: 'warning',
    summary:
      'a rule never decides: rules of higher precedence (or NetworkPolicy isolation, for the Baseline tier) decide everything it matches first — also a Calico rule behind lower orders, and a NetworkPolicy or Cilium allow behind a Cilium deny or a lower Calico order',
    hint: "delete the rule, or change what decides first as its engine orders rules (each finding's fix says how)",
  },
  SERVICE_SELECTS_NOTHING: {
    severity: 'warning',
    summary: 'a Service selects no pod or workload of the input: connections to it reach nothing',
    hint: "compare the Service's selector with the workloads' pod template labels",
  },
  SERVICE_TARGET_PORT_MISSING: {
    severity: 'warning',
    summary:
      "a Service's named targetPort is a container port of none (or only some) of the pods behind it: connections through that port fail there",
    hint: 'use the name the containers declare, or the port number',
  },
  PEERS_SPLIT_SELECTORS: {
    severity: 'warning',
    summary:
      'a rule lists a namespaceSelector and a podSelector as two peers (either one matches) where one peer with both (pods in those namespaces) is the usual intent',
    hint: 'put namespaceSelector and podSelector in one list item (no "-" before podSelector) if pods in those namespaces were meant',
  },
  EGRESS_WITHOUT_DNS: {
    severity: 'warning',
    summary: 'endpoints isolated for egress can reach no DNS server on UDP port 53, so name lookups fail',
    hint: 'add an egress rule to the DNS pods (e.g. kube-system, k8s-app=kube-dns) on UDP and TCP port 53',
  },
  WORKLOAD_NOT_ISOLATED: {
    severity: 'info',
    summary: 'no policy selects a pod or workload: every connection to and from it is allowed',
    hint: 'add a default-deny policy for its namespace and allow what it needs',
  },
  IPBLOCK_MATCHES_PODS: {
    severity: 'warning',
    summary:
      'an ipBlock covers pod addresses; whether pod traffic matches an ipBlock depends on the network plugin (the API means ipBlocks for addresses outside the cluster)',
    hint: 'add the pod network to except and use pod or namespace selectors for pods',
  },
  IPBLOCK_TOO_BROAD: {
    severity: 'warning',
    summary: 'an ipBlock wider than /8 (IPv4) or /32 (IPv6) on every port',
    hint: 'narrow the block to the networks meant, or restrict the rule to the ports needed',
  },
  DENY_POLICY_ISOLATES: {
    severity: 'warning',
    summary:
      'a Cilium policy whose only rules for a direction deny puts what it selects in default deny there (enableDefaultDeny is not false): endpoints nothing else isolates are denied all no rule allows, not only what it denies',
    hint: 'add an allow rule for what should still pass (e.g. fromEntities: [all]), or set enableDefaultDeny to false there',
  },
} as const satisfies Record<string, CatalogueEntry>;

export type LintCode = keyof typeof LINT_CATALOGUE;

export const LINT_CODES = Object.keys(LINT_CATALOGUE) as LintCode[];

/** How to fix the input diagnostics lint reports alongside its own findings. */
const DIAGNOSTIC_HINTS: Partial<Record<DiagnosticCode, string>> = {
  PRIORITY_TIE: 'give the policies distinct priorities, so their order is the one you chose',
  CIDR_HOST_BITS: 'write the prefix with its host bits zero',
  PEER_FAIL_CLOSED: 'use a peer field this version of the API defines',
  OBJECT_DUPLICATE: 'keep one definition of the object',
  LEGACY_ANNOTATION_IGNORED: "run 'palisade convert --to v1' and apply the policy it writes",
  // The object is not wrong: Palisade cannot say what it does.
  POLICY_KIND_NOT_EVALUATED:
    "nothing to correct: answers leave this policy out, so check what it allows with its own engine's tools, or remove it from the input if that engine is not deployed",
  POLICY_NOT_ANALYSED:
    "nothing to correct if the policy is meant: answers leave it out, so check what it does with its engine's own tools",
  RULE_NOT_ANALYSED:
    "nothing to correct if the rule is meant: answers assume for that part what the message says, so check it with its engine's own tools",
};

/** The catalogue entry of a lint or diagnostic code. */
export function catalogueEntry(code: LintCode | DiagnosticCode): CatalogueEntry {
  if (code in LINT_CATALOGUE) return LINT_CATALOGUE[code as LintCode];
  const diagnostic = DIAGNOSTIC_CATALOGUE[code as DiagnosticCode];
  return {
    severity: diagnostic.severity,
    summary: diagnostic.summary,
    hint:
      DIAGNOSTIC_HINTS[code as DiagnosticCode] ?? 'correct the input (docs/DIAGNOSTICS.md explains the code)',
  };
}

export function isKnownCode(code: string): code is LintCode | DiagnosticCode {
  return code in LINT_CATALOGUE || code in DIAGNOSTIC_CATALOGUE;
}
