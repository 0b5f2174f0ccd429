/**
 * Building the lab's network in the kernel: one network namespace per node, one per pod, and a
 * fabric namespace with a bridge that links the nodes. Pods are routed, not bridged: each pod has
 * its addresses as /32 (/128) on eth0 and a default route to its node (169.254.1.1 / fe80::1, which
 * every pod-facing interface of the node carries); the node routes each local pod's address to its
 * interface and each remote pod's address to that pod's node over the fabric. So every packet
 * between pods crosses a node's forward path, where Palisade's nftables table enforces policy.
 */
import { DataplaneError, run, runChecked } from '../dataplane/index.ts';
import { familyOf, type LabPlan } from './topology.ts';

const GATEWAY_V4 = '169.254.1.1';
const GATEWAY_V6 = 'fe80::1';

/** Runs many `ip` commands in one process (`ip -batch`), in a namespace when given. */
async function ipBatch(lines: readonly string[], netns?: string): Promise<void> {
  if (lines.length === 0) return;
  const args = netns ? ['-n', netns, '-batch', '-'] : ['-batch', '-'];
  const result = await run('ip', args, { input: lines.join('\n') + '\n' });
  if (result.code !== 0)
    throw new DataplaneError(`ip ${args.join(' ')} failed: ${result.stderr.trim() || `exit ${result.code}`}`);
}

async function sysctl(netns: string, settings: readonly string[]): Promise<void> {
  await runChecked('sysctl', ['-q', '-w', ...settings], { netns });
}

/** Every namespace the plan creates, for teardown. */
export function namespacesOf(plan: LabPlan): string[] {
  return [plan.fabricNetns, ...plan.nodes.map((n) => n.netns), ...plan.pods.map((p) => p.netns)];
}

export async function createNetwork(plan: LabPlan): Promise<void> {
  const existing = await listNamespaces();
  const clash = namespacesOf(plan).find((ns) => existing.has(ns));
  if (clash) throw new DataplaneError(`network namespace ${clash} already exists: is lab "${plan.name}" up?`);
  const nodeOf = new Map(plan.nodes.map((n) => [n.name, n]));

  await ipBatch(namespacesOf(plan).map((ns) => `netns add ${ns}`));
  // No duplicate address detection: interfaces must carry traffic as soon as the lab is up
  // (a tentative link-local address stalls neighbour discovery across the fabric for seconds).
  await Promise.all(
    namespacesOf(plan).map((ns) =>
      sysctl(ns, ['net.ipv6.conf.default.accept_dad=0', 'net.ipv6.conf.all.accept_dad=0']),
    ),
  );
  await ipBatch([
    ...plan.nodes.map(
      (n) => `link add name fab0 netns ${n.netns} type veth peer name n${n.index} netns ${plan.fabricNetns}`,
    ),
    ...plan.pods.map((p) => {
      const node = nodeOf.get(p.node);
      return `link add name ${p.hostInterface} netns ${node?.netns} type veth peer name eth0 netns ${p.netns}`;
    }),
  ]);

  await ipBatch(
    [
      'link set lo up',
      'link add name br0 type bridge',
      'link set br0 up',
      ...plan.nodes.flatMap((n) => [`link set n${n.index} master br0`, `link set n${n.index} up`]),
    ],
    plan.fabricNetns,
  );

  const withV6 = plan.pods.some((p) => p.ips.some((ip) => familyOf(ip) === 6));
  for (const node of plan.nodes) {
    await sysctl(node.netns, [
      'net.ipv4.ip_forward=1',
      'net.ipv6.conf.all.forwarding=1',
      'net.ipv4.conf.all.rp_filter=0',
      'net.ipv4.conf.default.rp_filter=0',
    ]);
    const lines = ['link set lo up', 'link set fab0 up'];
    for (const ip of node.addresses)
      lines.push(`addr add ${ip}/${familyOf(ip) === 4 ? 32 : 128} dev fab0 nodad`);
    for (const other of plan.nodes) {
      if (other === node) continue;
      for (const ip of other.addresses) lines.push(`route add ${ip} dev fab0`);
    }
    for (const pod of plan.pods) {
      if (pod.node === node.name) {
        lines.push(`link set ${pod.hostInterface} up`, `addr add ${GATEWAY_V4}/32 dev ${pod.hostInterface}`);
        if (withV6) lines.push(`addr add ${GATEWAY_V6}/64 dev ${pod.hostInterface} nodad`);
        for (const ip of pod.ips) lines.push(`route add ${ip} dev ${pod.hostInterface}`);
      } else {
        const remote = nodeOf.get(pod.node);
        for (const ip of pod.ips) {
          const via = remote?.addresses.find((a) => familyOf(a) === familyOf(ip));
          if (via) lines.push(`route add ${ip} via ${via} dev fab0`);
        }
      }
    }
    await ipBatch(lines, node.netns);
  }

  await Promise.all(
    plan.pods.map(async (pod) => {
      // Pod agents drop root right after starting; any port stays bindable inside their namespace.
      await sysctl(pod.netns, ['net.ipv4.ip_unprivileged_port_start=0']);
      const lines = ['link set lo up', 'link set eth0 up'];
      for (const ip of pod.ips) lines.push(`addr add ${ip}/${familyOf(ip) === 4 ? 32 : 128} dev eth0 nodad`);
      lines.push(
        `route add ${GATEWAY_V4} dev eth0 scope link`,
        `route add default via ${GATEWAY_V4} dev eth0`,
      );
      if (pod.ips.some((ip) => familyOf(ip) === 6))
        lines.push(`route add default via ${GATEWAY_V6} dev eth0`);
      await ipBatch(lines, pod.netns);
    }),
  );
}

export async function listNamespaces(): Promise<Set<string>> {
  const result = await run('ip', ['netns', 'list']);
  return new Set(
    result.stdout
      .split('\n')
      .map((line) => line.split(' ')[0] ?? '')
      .filter(Boolean),
  );
}

/**
 * Deletes the given namespaces that exist (and nothing else); their interfaces go with them.
 * Throws DataplaneError when one that exists could not be deleted.
 */
export async function deleteNamespaces(names: readonly string[]): Promise<void> {
  const existing = await listNamespaces();
  const lines = names.filter((ns) => existing.has(ns)).map((ns) => `netns delete ${ns}`);
  await ipBatch(lines);
}
