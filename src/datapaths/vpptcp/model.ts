/**
 * VPP session rules (the VPPTCP stack's `session_rule_add_del`), as JSON: what the VPPTCP
 * renderer produces and the interpreter reads. Addresses are given as prefixes in text.
 */
export const ACTION_DENY = 0xffffffff;
export const ACTION_ALLOW = 0xfffffffe;
export const SCOPE_GLOBAL = 1;
export const SCOPE_LOCAL = 2;

export interface SessionRule {
  /** 6 (TCP) or 17 (UDP): the session layer handles nothing else. */
  readonly transport_proto: 6 | 17;
  readonly is_ip4: boolean;
  readonly lcl: string;
  readonly rmt: string;
  /** 0: any port. */
  readonly lcl_port: number;
  readonly rmt_port: number;
  readonly action_index: number;
  /** The pod's application namespace (local scope); 0 for the global table. */
  readonly appns_index: number;
  readonly scope: typeof SCOPE_GLOBAL | typeof SCOPE_LOCAL;
  readonly tag: string;
}

export interface NodeSessionRules {
  /** Application namespace index of each local pod. */
  readonly namespaces: readonly { readonly pod: string; readonly appns_index: number }[];
  readonly rules: readonly SessionRule[];
}

export const sessionRuleKey = (r: SessionRule): string =>
  `${r.scope}|${r.appns_index}|${r.transport_proto}|${r.lcl}|${r.rmt}|${r.lcl_port}|${r.rmt_port}`;
