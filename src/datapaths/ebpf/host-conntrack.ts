/**
 * What direct delivery needs of the node's conntrack (bpf/host-ct.h): after a connection was
 * delivered directly its host entry is expired, so a later packet of it that takes the host's
 * path again is picked up mid-stream — which the host does only with `nf_conntrack_tcp_loose` on
 * (the kernel's default). With it off, that packet would be INVALID, and kube-proxy's rules drop
 * INVALID packets: the connection would be cut by the first update after it was delivered.
 */
import { spawnSync } from 'node:child_process';

const SYSCTL = ['sysctl', '-n', 'net.netfilter.nf_conntrack_tcp_loose'];

/**
 * Why the node cannot have direct delivery, or undefined when it can (the setting is on, or the
 * namespace has no conntrack to ask: then nothing translates or tracks its pods' packets).
 */
export function directDeliveryRefusal(netns: string | undefined): string | undefined {
  const argv = netns !== undefined ? ['nsenter', `--net=/run/netns/${netns}`, ...SYSCTL] : SYSCTL;
  const read = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
  if (read.error || read.status !== 0 || read.stdout.trim() !== '0') return undefined;
  const where = netns !== undefined ? ` in network namespace ${netns}` : '';
  return (
    `direct delivery is off: net.netfilter.nf_conntrack_tcp_loose is 0${where}, so a connection ` +
    "delivered directly and later back on the host's path would be INVALID to its conntrack " +
    '(set it to 1, or pass --no-direct-delivery to say so)'
  );
}
