/**
 * The kernel's connection tracking table, through the `conntrack` tool: list the tracked flows
 * and delete exactly the ones a policy update denies (one `-D` per flow, with every field of its
 * original direction as a filter, so no other flow is touched).
 */
import { formatIp, parseIp, type IpAddress } from '../net/ip.ts';
import type { Protocol } from '../model/types.ts';
import { run, DataplaneError, type ExecOptions } from './exec.ts';

export interface TrackedFlow {
  readonly protocol: Protocol;
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly srcPort: number;
  readonly dstPort: number;
}

const PROTOCOLS: Record<string, Protocol> = { tcp: 'TCP', udp: 'UDP', sctp: 'SCTP' };

/** Parses `conntrack -L` lines; the first src/dst/sport/dport are the original direction. */
export function parseConntrackList(text: string): TrackedFlow[] {
  const flows: TrackedFlow[] = [];
  for (const line of text.split('\n')) {
    const protocol = PROTOCOLS[line.split(/\s+/, 1)[0] ?? ''];
    if (!protocol) continue;
    const field = (name: string): string | undefined => new RegExp(`\\b${name}=(\\S+)`).exec(line)?.[1];
    const src = parseIp(field('src') ?? '');
    const dst = parseIp(field('dst') ?? '');
    const srcPort = Number(field('sport'));
    const dstPort = Number(field('dport'));
    if (!src.ok || !dst.ok || !Number.isInteger(srcPort) || !Number.isInteger(dstPort)) continue;
    flows.push({ protocol, src: src.value, dst: dst.value, srcPort, dstPort });
  }
  return flows;
}

export async function listFlows(options: Pick<ExecOptions, 'netns'> = {}): Promise<TrackedFlow[]> {
  const flows: TrackedFlow[] = [];
  for (const family of ['ipv4', 'ipv6']) {
    const result = await run('conntrack', ['-L', '-f', family], options);
    if (result.code === 127)
      throw new DataplaneError('conntrack is not installed (Debian package conntrack)');
    if (result.code !== 0) throw new DataplaneError(`conntrack -L failed: ${result.stderr.trim()}`);
    flows.push(...parseConntrackList(result.stdout));
  }
  return flows;
}

/** Deletes flows; a flow already gone (it ended meanwhile) is not an error. */
export async function deleteFlows(
  flows: readonly TrackedFlow[],
  options: Pick<ExecOptions, 'netns'> = {},
): Promise<number> {
  let deleted = 0;
  for (const flow of flows) {
    const result = await run(
      'conntrack',
      [
        '-D',
        '-f',
        flow.src.family === 4 ? 'ipv4' : 'ipv6',
        '-p',
        flow.protocol.toLowerCase(),
        '-s',
        formatIp(flow.src),
        '-d',
        formatIp(flow.dst),
        '--sport',
        String(flow.srcPort),
        '--dport',
        String(flow.dstPort),
      ],
      options,
    );
    if (result.code === 0) deleted++;
  }
  return deleted;
}
