/**
 * What the BPF program's kernel tests share (program*.test.ts): two nodes' scratch programs and a
 * renderer per node over their maps, fresh source ports, and a packet with the headers the
 * program's in-place read leaves to its copying parser.
 */
import type { Cluster } from '../../src/model/types.ts';
import type { EbpfRenderer } from '../../src/datapaths/ebpf/index.ts';
import { nodePipeline, scratchProgram } from '../helpers/ebpf.ts';

export const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

let nextPort = 10000;
/** A source port no earlier packet used, so every packet is a new connection. */
export const freshPort = (): number => (nextPort = nextPort >= 60000 ? 10000 : nextPort + 1);

/**
 * The same packet with headers the program's in-place read leaves to its copying parser: four
 * bytes of IPv4 options (NOPs), or an IPv6 hop-by-hop header (PadN) before the ports.
 */
export function withExtraHeaders(frame: Buffer): Buffer {
  const eth = frame.subarray(0, 14);
  if (frame.readUInt16BE(12) === 0x0800) {
    const ip = Buffer.from(frame.subarray(14, 34));
    ip[0] = 0x46;
    ip.writeUInt16BE(ip.readUInt16BE(2) + 4, 2);
    return Buffer.concat([eth, ip, Buffer.from([1, 1, 1, 1]), frame.subarray(34)]);
  }
  const ip = Buffer.from(frame.subarray(14, 54));
  const hop = Buffer.from([ip[6] as number, 0, 1, 4, 0, 0, 0, 0]);
  ip[6] = 0; // hop-by-hop options
  ip.writeUInt16BE(ip.readUInt16BE(4) + 8, 4);
  return Buffer.concat([eth, ip, hop, frame.subarray(54)]);
}

/** Nodes n1 and n2 as scratch programs for one suite (call inside its describe), and a renderer per node over their maps. */
export function twoNodes(): {
  n1: ReturnType<typeof scratchProgram>;
  n2: ReturnType<typeof scratchProgram>;
  render: (cluster: Cluster) => Map<string, EbpfRenderer>;
} {
  const n1 = scratchProgram('pt1');
  const n2 = scratchProgram('pt2');

  /** A renderer per node over its loaded maps (taking over whatever they held), resynced. */
  const render = (cluster: Cluster): Map<string, EbpfRenderer> => {
    const out = new Map<string, EbpfRenderer>();
    for (const [node, program] of [
      ['n1', n1],
      ['n2', n2],
    ] as const) {
      const { pipeline, renderer } = nodePipeline(node, program.maps());
      pipeline.apply({ type: 'resync', cluster });
      renderer.settle();
      out.set(node, renderer);
    }
    return out;
  };
  return { n1, n2, render };
}
