/**
 * A node's pinned maps, opened once: writes, deletes, lookups and walks through libbpf. Opening
 * checks every map's key and value size against layout.ts, so an object compiled from another
 * header is refused before a byte is written.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { libbpf, errnoName, ENOENT, type Libbpf } from './libbpf.ts';
import { MAP_NAMES, MAP_SHAPES, type MapName } from './layout.ts';
import { pinDir } from './loader.ts';
import { EbpfError, type BpfMaps, type PinLocation } from './types.ts';

const BPF_ANY = 0n;

export class PinnedMaps implements BpfMaps {
  private constructor(
    private readonly lib: Libbpf,
    private readonly fds: ReadonlyMap<MapName, number>,
    readonly location: PinLocation,
  ) {}

  /** Opens every map of a loaded node; throws an EbpfError when one is missing or has another shape. */
  static open(location: PinLocation): PinnedMaps {
    const lib = libbpf();
    const fds = new Map<MapName, number>();
    try {
      for (const name of MAP_NAMES) {
        const path = join(pinDir(location), 'maps', name);
        const fd = lib.objGet(path);
        if (fd < 0) throw new EbpfError(`opening the pinned map ${path} failed: ${errnoName(fd)}`);
        fds.set(name, fd);
        const info = lib.mapInfo(fd);
        const shape = MAP_SHAPES[name];
        if (info.keySize !== shape.key || info.valueSize !== shape.value)
          throw new EbpfError(
            `the pinned map ${path} has ${info.keySize}-byte keys and ${info.valueSize}-byte values, this version writes ${shape.key} and ${shape.value}: another version pinned it; remove it (\`lab down\`, or \`rm -r ${pinDir(location)}\`) and apply again`,
          );
      }
    } catch (error) {
      for (const fd of fds.values()) lib.close(fd);
      throw error;
    }
    return new PinnedMaps(lib, fds, location);
  }

  private fd(map: MapName): number {
    return this.fds.get(map) as number;
  }

  /**
   * Refuses a per-CPU map: its lookups and updates move a value per possible CPU, more than the
   * one-value buffers here hold (libbpf would read or write past them).
   */
  private shared(map: MapName): void {
    if (MAP_SHAPES[map].perCpu)
      throw new EbpfError(
        `the BPF map ${map} is the program's per-CPU working state: not read or written here`,
      );
  }

  put(map: MapName, key: Buffer, value: Buffer): void {
    this.shared(map);
    const code = this.lib.update(this.fd(map), key, value, BPF_ANY);
    if (code === 0) return;
    if (errnoName(code) === 'E2BIG')
      throw new EbpfError(
        `the BPF map ${map} is full (${this.lib.mapInfo(this.fd(map)).maxEntries} entries): this node's policy needs more than the program's maps hold (bpf/maps.h sizes them)`,
      );
    throw new EbpfError(`writing an entry of the BPF map ${map} failed: ${errnoName(code)}`);
  }

  /** Deletes an entry; one that is not there is not an error. */
  remove(map: MapName, key: Buffer): void {
    const code = this.lib.remove(this.fd(map), key);
    if (code !== 0 && code !== ENOENT)
      throw new EbpfError(`deleting an entry of the BPF map ${map} failed: ${errnoName(code)}`);
  }

  get(map: MapName, key: Buffer): Buffer | undefined {
    this.shared(map);
    const value = Buffer.alloc(MAP_SHAPES[map].value);
    const code = this.lib.lookup(this.fd(map), key, value);
    if (code === ENOENT) return undefined;
    if (code !== 0) throw new EbpfError(`reading the BPF map ${map} failed: ${errnoName(code)}`);
    return value;
  }

  /** Every (key, value) of a map, read one by one (a snapshot only while nothing writes it). */
  entries(map: MapName): [Buffer, Buffer][] {
    const shape = MAP_SHAPES[map];
    const out: [Buffer, Buffer][] = [];
    let key: Buffer | null = null;
    for (;;) {
      const next = Buffer.alloc(shape.key);
      const code = this.lib.nextKey(this.fd(map), key, next);
      if (code === ENOENT) return out;
      if (code !== 0) throw new EbpfError(`walking the BPF map ${map} failed: ${errnoName(code)}`);
      const value = this.get(map, next);
      if (value) out.push([next, value]);
      key = next;
    }
  }

  /**
   * Pins again every map whose pin is gone (someone removed it: the map lives on through this
   * process's descriptor and the programs using it). Returns the maps re-pinned.
   */
  repin(): MapName[] {
    const repinned: MapName[] = [];
    for (const [name, fd] of this.fds) {
      const path = join(pinDir(this.location), 'maps', name);
      if (existsSync(path)) continue;
      mkdirSync(dirname(path), { recursive: true });
      const code = this.lib.objPin(fd, path);
      if (code !== 0) throw new EbpfError(`pinning the map ${path} again failed: ${errnoName(code)}`);
      repinned.push(name);
    }
    return repinned;
  }

  /** Waits until every program run that started before now has finished (an RCU grace period). */
  graceSync(): void {
    this.lib.graceSync();
  }

  graceAsync(done: (error: Error | undefined) => void): void {
    this.lib.graceAsync(done);
  }

  close(): void {
    for (const fd of this.fds.values()) this.lib.close(fd);
  }
}

/** A node's pinned program (`from_pod` or `to_pod`), opened to run test packets through it. */
export class PinnedProgram {
  private constructor(
    private readonly lib: Libbpf,
    private readonly fd: number,
  ) {}

  static open(location: PinLocation, program: string): PinnedProgram {
    const lib = libbpf();
    const path = join(pinDir(location), 'progs', program);
    const fd = lib.objGet(path);
    if (fd < 0) throw new EbpfError(`opening the pinned program ${path} failed: ${errnoName(fd)}`);
    return new PinnedProgram(lib, fd);
  }

  /** Pins the program at `path` again when its pin is gone; whether it had to. */
  repinAt(path: string): boolean {
    if (existsSync(path)) return false;
    mkdirSync(dirname(path), { recursive: true });
    const code = this.lib.objPin(this.fd, path);
    if (code !== 0) throw new EbpfError(`pinning the program ${path} again failed: ${errnoName(code)}`);
    return true;
  }

  /** The program's verdict on a frame (TC_ACT_OK 0, TC_ACT_SHOT 2) and its mean run time in ns. */
  run(frame: Buffer, repeat = 1): { retval: number; duration: number } {
    return this.lib.testRun(this.fd, frame, repeat);
  }

  close(): void {
    this.lib.close(this.fd);
  }
}
