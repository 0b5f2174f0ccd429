/**
 * Names of everything Palisade creates in nftables. One table per node, `inet palisade`;
 * chains and sets are named after the content they hold (table ids, hashes of group references),
 * so equal content always has the same name and a chain, once created, never changes.
 */
import { hash } from 'node:crypto';
import type { IpFamily } from '../../net/ip.ts';

const TABLE_FAMILY = 'inet';
const TABLE_NAME = 'palisade';
/** `inet palisade`, as commands name it. */
export const TABLE = `${TABLE_FAMILY} ${TABLE_NAME}`;

/** The chain of one compiled rule table (ids are already content hashes). */
export const tableChain = (tableId: string): string => `t_${tableId}`;

/**
 * Ordered cluster policy for a pod direction: the sequence chain runs the Admin tier's rules and
 * continues (on pass or no match) in its continuation chain — the NetworkPolicy table, or the
 * Baseline tier's rules then the default. Keys are content hashes like table ids.
 */
export const sequenceChain = (key: string): string => `s_${key}`;
export const continuationChain = (key: string): string => `c_${key}`;

/** The chain that permits only what both tables permit (used between the phases of an update). */
export const intersectionChain = (first: string, second: string): string => `x_${first}_${second}`;

/**
 * The reply-direction twin of a chain or dispatch map: `t_…` → `rt_…`, `x_…` → `rx_…`,
 * `in_4` → `rin_4`. Verdicts are mapped the same way (`goto t_…` → `goto rt_…`).
 */
export const replyTwin = (name: string): string => `r${name}`;
/** The chain every policy drop of a new connection goes to with the flow log on (base-chains.ts). */
export const FLOW_DENY_CHAIN = 'flow_deny';
/** How a policy chain drops: plainly, or through the flow log's deny chain. */
export const denyVerdict = (flowLog: unknown): string => (flowLog ? `goto ${FLOW_DENY_CHAIN}` : 'drop');
export const replyVerdict = (verdict: string): string =>
  verdict.startsWith('goto ') ? `goto ${replyTwin(verdict.slice('goto '.length))}` : verdict;

/** The set holding one address group's (or named-port partition's) addresses of one family. */
export const groupSet = (reference: string, family: IpFamily): string =>
  `g_${hash('sha256', reference).slice(0, 16)}_${family}`;

/**
 * A named interval set of addresses that rules match by CIDR (an ipBlock and its holes), named
 * after its elements: equal lists in any chain (and a chain's reply twin) are one set.
 */
export const netSet = (family: IpFamily, elements: readonly string[]): string =>
  `n_${hash('sha256', elements.join(',')).slice(0, 16)}_${family}`;

/** Per-pod dispatch: pod address → verdict (jump to the pod's table chain, or return). */
export const dispatchMap = (direction: 'ingress' | 'egress', family: IpFamily): string =>
  `${direction === 'ingress' ? 'in' : 'eg'}_${family}`;

/**
 * Dispatch for traffic between a pod and its own node (input and output hooks): only pods with
 * cluster policy have entries — NetworkPolicy always allows that traffic, cluster policy judges it.
 */
export const localDispatchMap = (direction: 'ingress' | 'egress', family: IpFamily): string =>
  `${direction === 'ingress' ? 'inl' : 'egl'}_${family}`;

/** Addresses of this node's pods (fail closed: one without a dispatch entry is isolated). */
export const localPodsSet = (family: IpFamily): string => `pods_${family}`;
/** This node's pod CIDRs (fail closed for addresses not yet known as pods). */
export const podCidrSet = (family: IpFamily): string => `podcidr_${family}`;

export const FAMILIES: readonly IpFamily[] = [4, 6];

/**
 * The table's fingerprint: one element `generation . nonce`, replaced in every transaction
 * (a fresh random nonce each time). Reading it is cheap (one small set), so a process can check
 * that the table is still exactly what its own last commit left, without reading the table back.
 */
export const FINGERPRINT_SET = 'fingerprint';
export const FINGERPRINT_TYPE = 'mark . mark';
/** The nft address match of a family: `ip` or `ip6`. */
export const addressProtocol = (family: IpFamily): string => (family === 4 ? 'ip' : 'ip6');
export const addressType = (family: IpFamily): string => (family === 4 ? 'ipv4_addr' : 'ipv6_addr');

/**
 * Address ranges (`netSet`) are kept in sets keyed by the address and the packet's family: nft
 * reads every element of every single-field interval set of the table before each transaction
 * that touches any element (to check new ranges for overlaps), one kernel dump per set — at
 * shape (a) scale ~200 dumps a commit. A concatenation is checked by the kernel instead, so the
 * family is added as a second, constant field: `ip saddr . meta nfproto @n_…`.
 */
export const netSetType = (family: IpFamily): string => `${addressType(family)} . nf_proto`;
/** A netSet rule's match: the address field and the family beside it. */
export const netSetMatch = (match: string, name: string): string => `${match} . meta nfproto @${name}`;
/** A netSet element: the range and the family. */
export const netSetElement = (family: IpFamily, range: string): string =>
  `${range} . ${family === 4 ? 'ipv4' : 'ipv6'}`;
