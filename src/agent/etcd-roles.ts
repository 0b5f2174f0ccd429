/**
 * Least privilege in etcd for Palisade's control plane: which identity may read and write which
 * keys of the layout. etcd is the firewall's source of truth, so only the reflector may write
 * what agents enforce; an agent reads it and writes nothing but its own node's status; `palisade
 * status` and the lab's probes read only.
 *
 *   palisade-reflector        readwrite <root>/v1/k8s/ and <root>/v1/meta/reflector/ (its leader
 *                             key, its resourceVersion records)
 *   palisade-agent            read [<root>/v1/k8s/, end of <root>/v1/meta/reflector/resource-versions/):
 *                             the range an agent lists and watches (src/agent/agent.ts startWatch)
 *   palisade-agent-<node>     readwrite <root>/v1/status/nodes/<node> and …/status/agents/<node>
 *   palisade-reader           read <root>/v1/
 *
 * A DaemonSet cannot mount a certificate per node, so its agents share one identity
 * (`sharedAgentAuthPlan`): the user `palisade-agent` holds palisade-agent and
 * palisade-agent-status, readwrite on every node's status keys — an agent can then write another
 * node's status, never what any node enforces.
 *
 * Users of the same names hold them (an agent's user holds palisade-agent and its node's role);
 * with client certificates, a certificate's CN is its user. Leases need no permission to grant
 * or keep alive; revoking one needs write on the keys bound to it (etcd 3.4).
 */
import { prefixEnd, type EtcdAuthPlan, type EtcdRole, type EtcdUser } from '../etcd/index.ts';
import type { KeyLayout } from '../reflected/index.ts';
import { StatusKeys } from './status.ts';

export const REFLECTOR_USER = 'palisade-reflector';
export const READER_USER = 'palisade-reader';
/** The role every agent holds (reading what it enforces). */
const AGENT_ROLE = 'palisade-agent';

/** The etcd user (and certificate CN) the agents of a DaemonSet share. */
export const SHARED_AGENT_USER = 'palisade-agent';
/** Its second role: every node's status keys. */
const SHARED_AGENT_STATUS_ROLE = 'palisade-agent-status';

/** The etcd user (and certificate CN) of a node's agent. */
export const agentUser = (node: string): string => `palisade-agent-${node}`;

/** The roles and users for a layout and a set of nodes. */
export function palisadeAuthPlan(layout: KeyLayout, nodes: readonly string[]): EtcdAuthPlan {
  const status = new StatusKeys(layout);
  const roles: EtcdRole[] = [
    {
      name: REFLECTOR_USER,
      permissions: [
        { access: 'readwrite', keys: { prefix: layout.objects } },
        { access: 'readwrite', keys: { prefix: `${layout.base}meta/reflector/` } },
      ],
    },
    {
      name: AGENT_ROLE,
      permissions: [
        {
          access: 'read',
          keys: { from: layout.objects, to: prefixEnd(Buffer.from(layout.resourceVersions)).toString() },
        },
      ],
    },
    ...nodes.map((node): EtcdRole => ({
      name: agentUser(node),
      permissions: [
        { access: 'readwrite', keys: { key: status.node(node) } },
        { access: 'readwrite', keys: { key: status.agent(node) } },
      ],
    })),
    { name: READER_USER, permissions: [{ access: 'read', keys: { prefix: layout.base } }] },
  ];
  const users: EtcdUser[] = [
    { name: REFLECTOR_USER, roles: [REFLECTOR_USER] },
    ...nodes.map((node): EtcdUser => ({ name: agentUser(node), roles: [AGENT_ROLE, agentUser(node)] })),
    { name: READER_USER, roles: [READER_USER] },
  ];
  return { roles, users };
}

/**
 * The roles and users when every agent shares one identity (a DaemonSet's one Secret): the
 * reflector, the reader and the agents' read role as in `palisadeAuthPlan`, and the user
 * `palisade-agent` with write on the status keys of every node instead of one user per node.
 */
export function sharedAgentAuthPlan(layout: KeyLayout): EtcdAuthPlan {
  const status = new StatusKeys(layout);
  const base = palisadeAuthPlan(layout, []);
  return {
    roles: [
      ...base.roles,
      {
        name: SHARED_AGENT_STATUS_ROLE,
        permissions: [
          { access: 'readwrite', keys: { prefix: status.nodes } },
          { access: 'readwrite', keys: { prefix: status.agents } },
        ],
      },
    ],
    users: [...base.users, { name: SHARED_AGENT_USER, roles: [AGENT_ROLE, SHARED_AGENT_STATUS_ROLE] }],
  };
}
