/**
 * The table's fixed chains: the hooks, the tracked-flow fast path, per-pod dispatch in both
 * directions with the fail-closed guards, and the generation stamp. Tracked flows pass on the
 * fast path only when their connection mark carries the current generation; a commit writes a
 * new one (`generationScript`), so every older flow is judged again at its next packet.
 */
import type { IpFamily } from '../../net/ip.ts';
import {
  addressProtocol,
  denyVerdict,
  dispatchMap,
  FLOW_DENY_CHAIN,
  localDispatchMap,
  FAMILIES,
  localPodsSet,
  podCidrSet,
  replyTwin,
  TABLE,
} from './names.ts';

export interface BaseChainOptions {
  /**
   * Traffic between the node itself and its pods (kubelet probes, node-local DNS) bypasses
   * policy, as the reference evaluator's default says. Default true.
   */
  readonly allowNodeLocal?: boolean;
  /**
   * Re-check tracked flows after each update, cutting those the new policy denies. Default
   * true; false keeps established flows whatever the policy becomes.
   */
  readonly recheckFlows?: boolean;
  /**
   * The address families the node's pods use (default both). An IPv4-only cluster leaves out
   * every IPv6 set, map and rule: a pod without an IPv6 address receives no IPv6 dispatch, so
   * nothing is lost, and each transaction has half as many kernel objects to load.
   */
  readonly families?: readonly IpFamily[];
  /**
   * Report new connections' verdicts to this nflog group (flow-log.ts reads it), one message per
   * new connection: `A` after all of its policy passed it, or at a drop — every policy drop goes
   * to the `flow_deny` chain — `E` or `I` for the side whose policy dropped it (a connection-mark
   * bit, FLOW_INGRESS_BIT, set before the ingress side's dispatch, says which). Tracked packets
   * take the fast path before any of it: established flows cost nothing. Default off.
   */
  readonly flowLog?: { readonly group: number };
}

/** What a flow-log message says (its prefix): allowed, or dropped by that side's policy. */
export const FLOW_STAGES = { egress: 'E', ingress: 'I', allowed: 'A' } as const;

/** The connection-mark bits that carry the policy generation (the low 16 bits are left alone). */
const GENERATION_MASK = '0xffff0000';
/**
 * The top bit, which generations leave free (15 bits of them): set while a new connection's
 * ingress side is judged, so a drop knows its side; the stamp clears it.
 */
const FLOW_INGRESS_BIT = '0x80000000';
const generationMark = (generation: number): string =>
  `0x${((generation % 0x7fff) + 1).toString(16).padStart(4, '0')}0000`;

export function baseChains(
  options: BaseChainOptions,
  hasPodCidrs: (family: IpFamily) => boolean,
  generation: number,
): Map<string, string[]> {
  const families = options.families ?? FAMILIES;
  // A reply twin's drops are plain: a reply is never a new connection.
  const dispatch = (field: 'saddr' | 'daddr', map: (f: IpFamily) => string, reply = false): string[] =>
    families.flatMap((f) => {
      const ip = addressProtocol(f);
      const deny = reply ? 'drop' : denyVerdict(options.flowLog);
      const lines = [`${ip} ${field} vmap @${map(f)}`, `${ip} ${field} @${localPodsSet(f)} ${deny}`];
      if (hasPodCidrs(f)) lines.push(`${ip} ${field} @${podCidrSet(f)} ${deny}`);
      return lines;
    });
  const recheck = options.recheckFlows ?? true;
  const mark = generationMark(generation);
  const log = (stage: string): string =>
    `ct state new log prefix "${stage}" group ${options.flowLog?.group ?? 0} snaplen 80`;
  /** A hook chain: each police jump is one side (its pods' egress or ingress dispatch). */
  const hook = (
    name: string,
    police: [keyof typeof FLOW_STAGES, string][],
    replyCheck = 'reply_check',
  ): string[] => [
    `type filter hook ${name} priority filter; policy accept;`,
    'jump flow_fastpath',
    `ct direction reply goto ${replyCheck}`,
    ...police.flatMap(([side, jump]) => [
      ...(options.flowLog && side === 'ingress' ? [`ct mark set ct mark or ${FLOW_INGRESS_BIT}`] : []),
      jump,
    ]),
    ...(options.flowLog ? [log(FLOW_STAGES.allowed)] : []),
    'jump flow_stamp',
  ];
  // Node-local dispatch: no fail-closed guards (a pod without cluster policy talks to its node freely).
  const localDispatch = (field: 'saddr' | 'daddr', map: (f: IpFamily) => string): string[] =>
    families.map((f) => `${addressProtocol(f)} ${field} vmap @${map(f)}`);
  const chains = new Map<string, string[]>([
    ['pod_egress', dispatch('saddr', (f) => dispatchMap('egress', f))],
    ['pod_ingress', dispatch('daddr', (f) => dispatchMap('ingress', f))],
    // A reply packet's destination is the flow's source pod, its source the destination pod.
    ['reply_egress', dispatch('daddr', (f) => replyTwin(dispatchMap('egress', f)), true)],
    ['reply_ingress', dispatch('saddr', (f) => replyTwin(dispatchMap('ingress', f)), true)],
    [
      'flow_fastpath',
      recheck
        ? ['ct state related accept', `ct state established ct mark and ${GENERATION_MASK} == ${mark} accept`]
        : ['ct state established,related accept'],
    ],
    [
      'flow_stamp',
      recheck
        ? [`ct mark set ct mark and 0x0000ffff or ${mark}`]
        : options.flowLog
          ? [`ct mark set ct mark and 0x7fffffff`]
          : [],
    ],
    ['reply_check', ['jump reply_egress', 'jump reply_ingress', 'jump flow_stamp']],
    [
      'forward',
      hook('forward', [
        ['egress', 'jump pod_egress'],
        ['ingress', 'jump pod_ingress'],
      ]),
    ],
  ]);
  if (options.allowNodeLocal === false) {
    // The node's own traffic to its pods is policed too: on output (to pods), input (from them).
    chains.set('output', hook('output', [['ingress', 'jump pod_ingress']]));
    chains.set('input', hook('input', [['egress', 'jump pod_egress']]));
  } else {
    // NetworkPolicy leaves a pod's traffic with its own node alone, cluster policy does not:
    // pods with cluster policy have entries in the local dispatch maps.
    chains.set(
      'pod_egress_local',
      localDispatch('saddr', (f) => localDispatchMap('egress', f)),
    );
    chains.set(
      'pod_ingress_local',
      localDispatch('daddr', (f) => localDispatchMap('ingress', f)),
    );
    chains.set(
      'reply_egress_local',
      localDispatch('daddr', (f) => replyTwin(localDispatchMap('egress', f))),
    );
    chains.set(
      'reply_ingress_local',
      localDispatch('saddr', (f) => replyTwin(localDispatchMap('ingress', f))),
    );
    chains.set('reply_check_local', [
      'jump reply_egress_local',
      'jump reply_ingress_local',
      'jump flow_stamp',
    ]);
    chains.set('output', hook('output', [['ingress', 'jump pod_ingress_local']], 'reply_check_local'));
    chains.set('input', hook('input', [['egress', 'jump pod_egress_local']], 'reply_check_local'));
  }
  if (!options.flowLog) return chains;
  // First: the policy chains' drops go to it, and a chain must exist before a rule can name it.
  const deny = [
    `ct mark and ${FLOW_INGRESS_BIT} == ${FLOW_INGRESS_BIT} ${log(FLOW_STAGES.ingress)} drop`,
    log(FLOW_STAGES.egress),
    'drop',
  ];
  return new Map([[FLOW_DENY_CHAIN, deny], ...chains]);
}

/** The generation-dependent chains, rewritten in every incremental transaction. */
export function generationScript(chains: ReadonlyMap<string, readonly string[]>): string {
  const lines: string[] = [];
  for (const name of ['flow_fastpath', 'flow_stamp']) {
    lines.push(`flush chain ${TABLE} ${name}`);
    for (const rule of chains.get(name) ?? []) lines.push(`add rule ${TABLE} ${name} ${rule}`);
  }
  return lines.join('\n') + '\n';
}
