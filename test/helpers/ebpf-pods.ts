/**
 * Two pods of one node, for the BPF program's connection and hand-over tests: web (10.0.0.1) and
 * db (10.0.0.2) on n1, the policies those tests build on, TCP frames between them, and a local
 * end's side of a connection's entry in a node's connection table.
 */
import { frameOf, layout, type PinnedMaps } from '../../src/datapaths/ebpf/kernel/index.ts';
import { formatIp, type IpAddress } from '../../src/net/ip.ts';
import { ipOf, namespace, pod, policy, type Raw } from './builders.ts';

export const web = ipOf('10.0.0.1');
export const db = ipOf('10.0.0.2');
export const base: Raw[] = [
  namespace('a'),
  pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'], node: 'n1' }),
  pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2'], node: 'n1' }),
];
/** The same two pods with an IPv6 address each too. */
export const dual: Raw[] = [
  namespace('a'),
  pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1', 'fd00::1'], node: 'n1' }),
  pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.2', 'fd00::2'], node: 'n1' }),
];
/** db lets web in on port 80. */
export const dbFromWeb = policy('a', 'db', {
  podSelector: { matchLabels: { app: 'db' } },
  ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 80 }] }],
});
/** An app's pods isolated for one policy type ('Ingress' or 'Egress'), with no rule. */
export const isolated = (app: string, type: string): Raw =>
  policy('a', `${app}-${type.toLowerCase()}`, {
    podSelector: { matchLabels: { app } },
    policyTypes: [type],
  });
export const tcp = (src: IpAddress, dst: IpAddress, srcPort: number, dstPort: number): Buffer =>
  frameOf({ src, dst, protocol: 'TCP', srcPort, dstPort });
/** An IPv4 address as the program's 16-byte address field holds it. */
export const v4 = (ip: IpAddress): Buffer =>
  Buffer.from([...formatIp(ip).split('.').map(Number), ...new Array<number>(12).fill(0)]);

/** A local end's side of a TCP connection's entry in a node's connection table (undefined: not judged). */
export function ctSideIn(
  maps: PinnedMaps,
  local: IpAddress,
  remote: IpAddress,
  localPort: number,
  remotePort: number,
): ReturnType<typeof layout.decodeCtSide> {
  const ends = [local, remote].map((ip) => ({ family: 4 as const, bytes: v4(ip) }));
  const { key, end } = layout.ctKey(6, ends[0]!, ends[1]!, localPort, remotePort);
  const value = maps.get('conntrack', key);
  return value && layout.decodeCtSide(value, end);
}
