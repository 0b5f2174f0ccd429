/**
 * VPP datapaths: the node's rendered configuration handed to a ligato vpp-agent as keys in etcd,
 * as the seed's policy plugin hands policy to VPP. After each pipeline commit the node's
 * documents are computed from the renderer, compared with what etcd holds under this agent's
 * prefixes, and only the keys that differ are put or deleted.
 *
 *   vpp-acl:  <prefix><label>/config/vpp/acls/v2/acl/<acl name>   one ligato `vpp.acls` ACL
 *             (vpp-agent's model `ligato.vpp.acl.ACL`, key `config/vpp/acls/v2/acl/<name>`;
 *             proto field names, which vpp-agent's JSON reader accepts; actions by enum name)
 *   vpptcp:   <prefix><label>/config/vpp/session-rules/v1/global          the global table
 *             <prefix><label>/config/vpp/session-rules/v1/local/<pod>     one pod's local table
 *             vpp-agent has no session-rule model (its L4 plugin is gone in v3): each rule is
 *             VPP's own `session_rule_add_del` message in VPP's JSON form (session.api), the
 *             pod's application namespace named by the key rather than by the index VPP gives it.
 *
 * What etcd holds is read at start (`prepare`), not remembered from a previous run — a restarted
 * agent writes exactly the difference (Kuryr's generation check, by content). Writes go in
 * transactions of at most `maxTxnOps` operations, puts before deletes; a failed transaction
 * leaves what was written before it recorded and is retried from there.
 */
import type { EtcdStore, TxnOp } from '../etcd/types.ts';
import type { AclRendering, Acl } from './vpp-acl/index.ts';
import { SCOPE_GLOBAL, type SessionRendering, type SessionRule } from './vpptcp/index.ts';
import type { DatapathCounts, NodeContext, NodeDatapath, Renderer } from './types.ts';

/** Where a node's vpp-agent documents live in etcd. */
interface VppKeys {
  /** `<prefix><label>/config/` */
  readonly config: string;
  /** The prefixes this datapath owns (read at start, cleaned up by --cleanup). */
  readonly owned: readonly string[];
}

export function vppKeys(
  datapath: 'vpp-acl' | 'vpptcp',
  label: string,
  prefix = '/vnf-agent/',
): VppKeys & { readonly acl: (name: string) => string; readonly sessions: string } {
  const config = `${prefix.endsWith('/') ? prefix : `${prefix}/`}${label}/config/`;
  const acls = `${config}vpp/acls/v2/acl/`;
  const sessions = `${config}vpp/session-rules/v1/`;
  return {
    config,
    owned: [datapath === 'vpp-acl' ? acls : sessions],
    acl: (name) => `${acls}${name}`,
    sessions,
  };
}

/** The documents of a vpp-acl rendering: key → JSON value. */
export function aclDocuments(rendering: AclRendering, key: (name: string) => string): Map<string, string> {
  const documents = new Map<string, string>();
  for (const acl of rendering.acls) documents.set(key(acl.name), JSON.stringify(aclValue(acl)));
  return documents;
}

/** A ligato ACL as vpp-agent reads it (the proto's field names, in the proto's order). */
function aclValue(acl: Acl): unknown {
  return {
    name: acl.name,
    rules: acl.rules.map((rule) => ({
      action: rule.action,
      ip_rule: {
        ip: {
          destination_network: rule.ip_rule.ip.destination_network,
          source_network: rule.ip_rule.ip.source_network,
          ...(rule.ip_rule.ip.protocol !== undefined ? { protocol: rule.ip_rule.ip.protocol } : {}),
        },
        ...(rule.ip_rule.tcp ? { tcp: rule.ip_rule.tcp } : {}),
        ...(rule.ip_rule.udp ? { udp: rule.ip_rule.udp } : {}),
      },
    })),
    interfaces: { egress: acl.interfaces.egress, ingress: acl.interfaces.ingress },
  };
}

/** The documents of a vpptcp rendering: the global table and one local table per pod. */
export function sessionDocuments(rendering: SessionRendering, prefix: string): Map<string, string> {
  const podOf = new Map(rendering.namespaces.map((n) => [n.appns_index, n.pod]));
  const global: SessionRuleMessage[] = [];
  const local = new Map<string, SessionRuleMessage[]>();
  for (const pod of podOf.values()) local.set(pod, []);
  for (const rule of rendering.rules) {
    if (rule.appns_index === 0) global.push(sessionRuleMessage(rule));
    else local.get(podOf.get(rule.appns_index)!)?.push(sessionRuleMessage(rule));
  }
  const documents = new Map<string, string>();
  documents.set(`${prefix}global`, JSON.stringify({ rules: global }));
  for (const [pod, rules] of local)
    documents.set(`${prefix}local/${pod.replace('/', '-')}`, JSON.stringify({ pod, rules }));
  return documents;
}

/**
 * A session rule as VPP's `session_rule_add_del` message in VPP's JSON form (what its JSON
 * reader, vat2, takes: enums by name, prefixes as text), without `client_index` and `context`
 * (per API connection) and `appns_index` — VPP numbers an application namespace when it is
 * created, so the document's key names the pod instead.
 */
type SessionRuleMessage = ReturnType<typeof sessionRuleMessage>;
function sessionRuleMessage(rule: SessionRule) {
  return {
    transport_proto: rule.transport_proto === 6 ? 'TRANSPORT_PROTO_API_TCP' : 'TRANSPORT_PROTO_API_UDP',
    lcl: rule.lcl,
    rmt: rule.rmt,
    lcl_port: rule.lcl_port,
    rmt_port: rule.rmt_port,
    action_index: rule.action_index,
    is_add: true,
    scope: rule.scope === SCOPE_GLOBAL ? 'SESSION_RULE_SCOPE_API_GLOBAL' : 'SESSION_RULE_SCOPE_API_LOCAL',
    tag: rule.tag,
  };
}

/** The operations that turn `held` into `wanted`: puts first, then deletes. */
export function documentOps(held: ReadonlyMap<string, string>, wanted: ReadonlyMap<string, string>): TxnOp[] {
  const ops: TxnOp[] = [];
  for (const [key, value] of wanted) if (held.get(key) !== value) ops.push({ type: 'put', key, value });
  for (const key of held.keys()) if (!wanted.has(key)) ops.push({ type: 'delete', key });
  return ops;
}

/** Applies `ops` in transactions of at most `maxOps`, recording each in `held` once committed. */
async function writeDocuments(
  store: EtcdStore,
  held: Map<string, string>,
  ops: readonly TxnOp[],
  maxOps: number,
): Promise<void> {
  for (let i = 0; i < ops.length; i += maxOps) {
    const chunk = ops.slice(i, i + maxOps);
    await store.txn([], chunk);
    for (const op of chunk) {
      if (op.type === 'put') held.set(op.key, op.value);
      else held.delete(op.key);
    }
  }
}

/** What a document backend renders: its renderer, and the documents and counts it has realized. */
interface DocumentSource {
  readonly renderer: Renderer;
  readonly documents: () => Map<string, string>;
  readonly counts: () => DatapathCounts;
}

/** The node lifecycle of a document backend (vpp-acl/node.ts, vpptcp/node.ts): its documents kept in etcd. */
export function documentDatapath(
  name: 'vpp-acl' | 'vpptcp',
  context: NodeContext,
  source: (keys: ReturnType<typeof vppKeys>) => DocumentSource,
): NodeDatapath {
  const store = context.store;
  if (!store) throw new Error(`the ${name} datapath writes to etcd and was given no connection`);
  const keys = vppKeys(name, context.vppAgentLabel ?? context.node, context.vppAgentPrefix);
  const maxOps = context.maxTxnOps ?? 128;
  const held = new Map<string, string>();
  /** What the last verification found should be there (what was written). */
  let wanted = new Map<string, string>();
  const { renderer, documents, counts } = source(keys);
  const readHeld = async (): Promise<void> => {
    held.clear();
    for (const prefix of keys.owned)
      for (const kv of (await store.range(prefix)).kvs) held.set(kv.key, kv.value);
  };
  return {
    name,
    renderer,
    async prepare() {
      await readHeld();
      return `${held.size} vpp-agent keys under ${keys.owned.join(', ')} kept until the first snapshot is rendered`;
    },
    async realize() {
      await writeDocuments(store, held, documentOps(held, documents()), maxOps);
    },
    counts,
    async verify() {
      // What etcd holds under this datapath's prefixes against what was last written.
      const written = new Map(held);
      await readHeld();
      const differences: string[] = [];
      for (const [key, value] of written)
        if (!held.has(key)) differences.push(`${key} is missing`);
        else if (held.get(key) !== value) differences.push(`${key} was rewritten`);
      for (const key of held.keys()) if (!written.has(key)) differences.push(`${key} is not this agent's`);
      // `held` now says what etcd holds: a repair writes the difference to what was written.
      wanted = written;
      return differences.length > 12
        ? [...differences.slice(0, 12), `and ${differences.length - 12} more`]
        : differences;
    },
    async repair() {
      await writeDocuments(store, held, documentOps(held, wanted), maxOps);
    },
    async cleanup() {
      await readHeld();
      const ops: TxnOp[] = [...held.keys()].map((key) => ({ type: 'delete', key }));
      await writeDocuments(store, held, ops, maxOps);
      return `deleted ${ops.length} vpp-agent keys under ${keys.owned.join(', ')}`;
    },
    async close() {},
  };
}
