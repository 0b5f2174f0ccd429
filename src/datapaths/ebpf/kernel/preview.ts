/**
 * A node's maps as a renderer would leave them, without touching the kernel: reads go to the real
 * maps, writes to an overlay that later reads see. The lab uses it when a command only looks
 * (`lab probe`): the policy is rendered over what the kernel holds, and the writes it would take
 * are counted as drift instead of being made — so the probe measures what the kernel enforces.
 */
import type { MapName } from './layout.ts';
import type { BpfMaps } from './types.ts';

export class PreviewMaps implements BpfMaps {
  /** Per map: key (hex) → the value written over the kernel's, or null where it was deleted. */
  private readonly overlay = new Map<MapName, Map<string, Buffer | null>>();
  /** Writes that would change the kernel: a different value, or a deletion of a present key. */
  changes = 0;

  constructor(private readonly kernel: BpfMaps) {}

  private layer(map: MapName): Map<string, Buffer | null> {
    let layer = this.overlay.get(map);
    if (!layer) this.overlay.set(map, (layer = new Map<string, Buffer | null>()));
    return layer;
  }

  put(map: MapName, key: Buffer, value: Buffer): void {
    if (!this.get(map, key)?.equals(value)) this.changes++;
    this.layer(map).set(key.toString('hex'), Buffer.from(value));
  }

  remove(map: MapName, key: Buffer): void {
    if (this.get(map, key) !== undefined) this.changes++;
    this.layer(map).set(key.toString('hex'), null);
  }

  get(map: MapName, key: Buffer): Buffer | undefined {
    const written = this.overlay.get(map)?.get(key.toString('hex'));
    if (written !== undefined) return written ?? undefined;
    return this.kernel.get(map, key);
  }

  entries(map: MapName): [Buffer, Buffer][] {
    const layer = this.overlay.get(map);
    if (!layer) return this.kernel.entries(map);
    const out = this.kernel.entries(map).filter(([key]) => !layer.has(key.toString('hex')));
    for (const [hex, value] of layer) if (value) out.push([Buffer.from(hex, 'hex'), value]);
    return out;
  }
  // No grace periods: nothing reads the overlay concurrently, so a commit's tail runs at once.
}
