/**
 * A node's pinned maps with a record of what the renderer wrote to the policy maps — the maps
 * the program only reads — so the agent can tell whether the kernel still holds it (root may
 * edit a map behind its back: `bpftool map update`, a stray delete) and put it back. The record
 * starts from what the maps hold when opened (the renderer reads them back and continues) and
 * follows every write; the program's own maps (connections, learned peers, per-CPU state) are
 * not in it.
 */
import type { MapName } from './layout.ts';
import type { BpfMaps } from './types.ts';

/** The maps the renderer writes and the program only reads. */
const POLICY_MAPS: readonly MapName[] = [
  'gen',
  'config',
  'records',
  'record_groups',
  'tables',
  'ports',
  'ranges',
  'cidrs',
  'groups',
  'bits',
  'actions',
  'group_names',
];

export class ShadowMaps implements BpfMaps {
  /** Per policy map: key (hex) → the value written. */
  private readonly written = new Map<MapName, Map<string, Buffer>>();
  readonly graceSync?: () => void;
  readonly graceAsync?: (done: (error: Error | undefined) => void) => void;

  constructor(private readonly kernel: BpfMaps) {
    for (const map of POLICY_MAPS)
      this.written.set(map, new Map(kernel.entries(map).map(([key, value]) => [key.toString('hex'), value])));
    if (kernel.graceSync) this.graceSync = () => kernel.graceSync!();
    if (kernel.graceAsync) this.graceAsync = (done) => kernel.graceAsync!(done);
  }

  put(map: MapName, key: Buffer, value: Buffer): void {
    this.kernel.put(map, key, value);
    this.written.get(map)?.set(key.toString('hex'), Buffer.from(value));
  }

  remove(map: MapName, key: Buffer): void {
    this.kernel.remove(map, key);
    this.written.get(map)?.delete(key.toString('hex'));
  }

  get(map: MapName, key: Buffer): Buffer | undefined {
    return this.kernel.get(map, key);
  }

  entries(map: MapName): [Buffer, Buffer][] {
    return this.kernel.entries(map);
  }

  /** One line per policy map whose entries are not what was written (empty: all are). */
  differences(): string[] {
    const lines: string[] = [];
    for (const [map, written] of this.written) {
      const { missing, changed, extra } = this.compare(map, written);
      const parts = [
        missing.length > 0 ? `${missing.length} missing` : '',
        changed.length > 0 ? `${changed.length} changed` : '',
        extra.length > 0 ? `${extra.length} not Palisade's` : '',
      ].filter(Boolean);
      if (parts.length > 0)
        lines.push(
          `map ${map}: ${parts.join(', ')} entr${missing.length + changed.length + extra.length === 1 ? 'y' : 'ies'}`,
        );
    }
    return lines;
  }

  /** Writes back every entry that differs from what was written and removes the rest. */
  restore(): void {
    for (const [map, written] of this.written) {
      const { missing, changed, extra } = this.compare(map, written);
      for (const hex of [...missing, ...changed])
        this.kernel.put(map, Buffer.from(hex, 'hex'), written.get(hex)!);
      for (const hex of extra) this.kernel.remove(map, Buffer.from(hex, 'hex'));
    }
  }

  private compare(
    map: MapName,
    written: ReadonlyMap<string, Buffer>,
  ): { missing: string[]; changed: string[]; extra: string[] } {
    const held = new Map(this.kernel.entries(map).map(([key, value]) => [key.toString('hex'), value]));
    const missing: string[] = [];
    const changed: string[] = [];
    const extra: string[] = [];
    for (const [hex, value] of written) {
      const now = held.get(hex);
      if (now === undefined) missing.push(hex);
      else if (!now.equals(value)) changed.push(hex);
    }
    for (const hex of held.keys()) if (!written.has(hex)) extra.push(hex);
    return { missing, changed, extra };
  }
}
