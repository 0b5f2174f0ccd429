/**
 * A lab node's own netfilter, as the tests of the host-conntrack gate see it: nft tables written
 * into the node's namespace (what kube-proxy or a host firewall would have there), their named
 * counters, the host's connection tracking table (`conntrack -L`), and a pod namespace's TCP
 * retransmission count. Needs root, nft and conntrack (conntrack-tools; .ci/run installs it).
 */
import { spawnSync } from 'node:child_process';
import { run, runChecked } from '../../src/dataplane/index.ts';

/** The skip reason when the conntrack tool is missing, or false. */
export function needsConntrackTool(what: string): string | false {
  const probe = spawnSync('conntrack', ['--version']);
  return probe.error || probe.status !== 0
    ? `skipped: ${what} needs conntrack (apt-get install conntrack)`
    : false;
}

/** Loads an nft script (`nft -f -`) into a namespace. */
export async function nftLoad(netns: string, script: string): Promise<void> {
  await runChecked('nft', ['-f', '-'], { netns, input: script });
}

/** Deletes a table when it exists (cleanup: also when the namespace is already gone). */
export async function nftDeleteTable(netns: string, family: string, table: string): Promise<void> {
  await run('nft', ['delete', 'table', family, table], { netns });
}

/** The packets a named counter has counted. */
export async function nftCounter(
  netns: string,
  family: string,
  table: string,
  name: string,
): Promise<number> {
  const out = await runChecked('nft', ['-j', 'list', 'counter', family, table, name], { netns });
  const parsed = JSON.parse(out) as { nftables: { counter?: { packets: number } }[] };
  const counter = parsed.nftables.find((item) => item.counter)?.counter;
  if (!counter) throw new Error(`no counter ${name} in ${family} ${table} (${netns})`);
  return counter.packets;
}

/** One direction of a tracked connection: addresses and ports as conntrack prints them. */
export interface Tuple {
  readonly src: string;
  readonly dst: string;
  readonly sport?: number;
  readonly dport?: number;
}

/** One entry of the host's connection tracking table. */
export interface HostConnection {
  readonly protocol: string;
  /** TCP's state (ESTABLISHED, SYN_SENT…); absent for UDP. */
  readonly state?: string;
  readonly original: Tuple;
  readonly reply: Tuple;
  /** The line as conntrack printed it, for messages. */
  readonly line: string;
}

function tupleOf(fields: ReadonlyMap<string, string>[], index: number): Tuple {
  const f = fields[index] ?? new Map<string, string>();
  const port = (name: string) => (f.has(name) ? Number(f.get(name)) : undefined);
  const sport = port('sport');
  const dport = port('dport');
  return {
    src: f.get('src') ?? '',
    dst: f.get('dst') ?? '',
    ...(sport !== undefined ? { sport } : {}),
    ...(dport !== undefined ? { dport } : {}),
  };
}

/**
 * The node's tracked connections of a protocol (`conntrack -L -p PROTO`). Each `key=value`
 * group after the state is one direction: the original first, the reply second.
 */
export async function hostConnections(netns: string, protocol: 'tcp' | 'udp'): Promise<HostConnection[]> {
  const result = await run('conntrack', ['-L', '-p', protocol], { netns });
  // conntrack exits 0 with a summary on stderr; an empty table is not an error.
  if (result.code !== 0) throw new Error(`conntrack -L in ${netns} failed: ${result.stderr.trim()}`);
  return result.stdout
    .split('\n')
    .filter((line) => line.startsWith(protocol))
    .map((line) => {
      const words = line.split(/\s+/);
      const directions: Map<string, string>[] = [];
      let state: string | undefined;
      for (const word of words.slice(3)) {
        const eq = word.indexOf('=');
        if (eq < 0) {
          if (directions.length === 0 && /^[A-Z_]+$/.test(word)) state = word;
          continue;
        }
        const key = word.slice(0, eq);
        if (key === 'src') directions.push(new Map());
        directions.at(-1)?.set(key, word.slice(eq + 1));
      }
      return {
        protocol,
        ...(state !== undefined ? { state } : {}),
        original: tupleOf(directions, 0),
        reply: tupleOf(directions, 1),
        line,
      };
    });
}

/** Entries between two addresses, whichever way round and whatever translation they carry. */
export const between = (entries: readonly HostConnection[], a: string, b: string): HostConnection[] =>
  entries.filter((e) =>
    [e.original, e.reply].some((t) => (t.src === a && t.dst === b) || (t.src === b && t.dst === a)),
  );

/** TCP segments a namespace has retransmitted (/proc/net/snmp is per namespace). */
export async function retransmittedSegments(netns: string): Promise<number> {
  const snmp = await runChecked('cat', ['/proc/net/snmp'], { netns });
  const lines = snmp.split('\n').filter((line) => line.startsWith('Tcp:'));
  const names = (lines[0] ?? '').split(/\s+/);
  const values = (lines[1] ?? '').split(/\s+/);
  const at = names.indexOf('RetransSegs');
  if (at < 0) throw new Error(`no RetransSegs in ${netns}'s /proc/net/snmp`);
  return Number(values[at]);
}
