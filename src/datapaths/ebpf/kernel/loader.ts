/**
 * Loading, pinning and attaching the program, with the kernel's own tools: `bpftool prog loadall`
 * loads both programs and pins them and their maps under a per-node directory of the BPF
 * filesystem; they are attached to a pod's host-side veth (`from_pod` on ingress, `to_pod` on
 * egress) with tcx links pinned beside them (bpf/tcx-link.c) where the kernel has tcx, else
 * with `tc` (clsact). tc runs through `nsenter --net`, not `ip netns exec`: the latter mounts a
 * fresh /sys, which hides the BPF filesystem and with it the pinned programs.
 *
 * Everything here is idempotent: a node whose pins exist is re-opened, not loaded again (its maps
 * hold the policy the kernel enforces, which the renderer reads back), attaching replaces a filter,
 * and removing what is gone is not an error.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { compiledObject, requireBpftool, tcxTool } from './toolchain.ts';
import { MAP_NAMES } from './layout.ts';
import { EbpfError, type PinLocation } from './types.ts';

const BPFFS = '/sys/fs/bpf';
const PIN_ROOT = `${BPFFS}/palisade`;

/** The program names (sections) in the object. */
export const PROGRAMS = { fromPod: 'from_pod', toPod: 'to_pod' } as const;

export function pinDir(location: PinLocation): string {
  return join(location.root ?? PIN_ROOT, location.instance);
}

function tryTool(argv: readonly string[]): SpawnSyncReturns<string> {
  return spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
}

function runTool(argv: readonly string[], what: string): string {
  const result = tryTool(argv);
  if (result.error || result.status !== 0) {
    const message = (result.stderr || String(result.error ?? '')).trim().split('\n');
    const line = message.find((l) => /error|Error|cannot|Cannot|failed/.test(l)) ?? message.at(-1) ?? '';
    const reason = verifierReason(result.stderr ?? '');
    throw new EbpfError(
      `${what} failed: ${line || `exit ${result.status}`}` +
        (reason ? `\nthe verifier's log ends:\n${reason.replace(/^/gm, '  ')}` : ''),
    );
  }
  return result.stdout;
}

/**
 * Why the kernel's verifier refused a program: the last lines of the load log libbpf prints
 * (between its BEGIN and END PROG LOAD LOG markers) on bpftool's stderr — the refused
 * instruction, the verifier's complaint and its count of processed instructions — or '' when
 * there is no log (a failure before the verifier, or another tool). A developer sees the reason
 * rather than only "Permission denied".
 */
export function verifierReason(stderr: string, count = 8): string {
  const lines = stderr.split('\n');
  const begin = lines.findIndex((l) => l.includes('-- BEGIN PROG LOAD LOG --'));
  if (begin < 0) return '';
  const end = lines.findIndex((l, i) => i > begin && l.includes('-- END PROG LOAD LOG --'));
  const log = lines.slice(begin + 1, end < 0 ? undefined : end).filter((l) => l.trim() !== '');
  return log.slice(-count).join('\n');
}

/**
 * Mounts the BPF filesystem at /sys/fs/bpf when it is not (a fresh machine may not have it).
 * Call it before making any directory under the pin root: without the mount, /sys/fs/bpf is
 * sysfs, where mkdir fails with ENOENT, and Node 20's recursive mkdirSync then retries forever at
 * full CPU (a benchmark hung so on a freshly booted machine).
 */
export function ensureBpffs(): void {
  const mounts = readFileSync('/proc/mounts', 'utf8');
  if (mounts.split('\n').some((line) => line.split(' ')[1] === BPFFS && line.split(' ')[2] === 'bpf')) return;
  mkdirSync(BPFFS, { recursive: true });
  runTool(['mount', '-t', 'bpf', 'bpf', BPFFS], 'mounting the BPF filesystem');
}

/** Whether a node's program and every map are pinned already. */
export function isLoaded(location: PinLocation): boolean {
  const dir = pinDir(location);
  return (
    existsSync(join(dir, 'progs', PROGRAMS.fromPod)) &&
    existsSync(join(dir, 'progs', PROGRAMS.toPod)) &&
    MAP_NAMES.every((name) => existsSync(join(dir, 'maps', name)))
  );
}

/**
 * Loads the program and pins it with fresh maps, unless this node's pins exist (then they are
 * kept: the maps are the enforced state). Returns whether it loaded anew. Throws an EbpfError
 * when clang or bpftool is missing or the kernel refuses the program.
 */
export function loadProgram(location: PinLocation): boolean {
  ensureBpffs();
  if (isLoaded(location)) return false;
  requireBpftool();
  const object = compiledObject();
  const dir = pinDir(location);
  // A half-done earlier load (some pins missing) is removed first: loadall wants fresh paths.
  clearLoad(dir);
  mkdirSync(dir, { recursive: true });
  try {
    runTool(
      ['bpftool', 'prog', 'loadall', object, join(dir, 'progs'), 'pinmaps', join(dir, 'maps')],
      'loading the eBPF program (bpftool prog loadall)',
    );
  } catch (error) {
    clearLoad(dir);
    // Nothing of this node is left (no links of an earlier load): its directory goes too, so a
    // failed load leaves no trace under the pin root.
    if (readdirSync(dir).length === 0) rmdirSync(dir);
    throw error;
  }
  return true;
}

/**
 * Removes a node's program and map pins but keeps its tcx link pins: a link lives only as long
 * as its pin, so removing it would leave the pod's interface with no program at all (open) until
 * the next attach. Kept, it runs the earlier program over its earlier maps — the policy enforced
 * before, as a tc filter does — until attach swaps the new program into it.
 */
function clearLoad(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir))
    if (entry !== 'links') rmSync(join(dir, entry), { recursive: true, force: true });
}

function tc(netns: string | undefined, args: readonly string[]): string[] {
  return netns ? ['nsenter', `--net=/run/netns/${netns}`, 'tc', ...args] : ['tc', ...args];
}

export const HOOKS = [
  ['ingress', PROGRAMS.fromPod],
  ['egress', PROGRAMS.toPod],
] as const;

/** Where a tcx link of a node's programs on an interface is pinned. */
export const linkPin = (location: PinLocation, device: string, hook: string): string =>
  join(pinDir(location), 'links', `${device}-${hook}`);

const netnsPath = (netns: string | undefined): string => (netns ? `/run/netns/${netns}` : '-');

/**
 * Attaches the node's programs to an interface (a pod's host-side veth), replacing any earlier:
 * with tcx links where the kernel has them (6.6+; bpf/tcx-link.c says why), else with tc (clsact,
 * cls_bpf in direct-action mode). `tcOnly` (for comparing the two): tc whatever the kernel has.
 */
export function attach(
  location: PinLocation,
  netns: string | undefined,
  device: string,
  options: { readonly tcOnly?: boolean } = {},
): void {
  const dir = pinDir(location);
  const where = `${device}${netns ? ` in ${netns}` : ''}`;
  const tool = options.tcOnly ? undefined : tcxTool();
  if (tool !== undefined && attachTcx(tool, location, netns, device, where)) {
    // A filter an earlier tc attachment of ours left would run after the links: they decide
    // first, so removing it now leaves no moment without a program. Only our filters go: the
    // clsact qdisc may hold other programs (a CNI's), which are not ours to remove.
    for (const [hook, program] of HOOKS)
      if (ourTcFilter(netns, device, hook, program))
        tryTool(tc(netns, ['filter', 'del', 'dev', device, hook, 'pref', '1', 'handle', '1', 'bpf']));
    return;
  }
  runTool(tc(netns, ['qdisc', 'replace', 'dev', device, 'clsact']), `adding clsact to ${where}`);
  for (const [hook, program] of HOOKS)
    runTool(
      tc(netns, [
        'filter',
        'replace',
        'dev',
        device,
        hook,
        'pref',
        '1',
        'handle',
        '1',
        'bpf',
        'direct-action',
        'pinned',
        join(dir, 'progs', program),
      ]),
      `attaching ${program} to ${where}`,
    );
}

/** Both hooks' links; false when the kernel has no tcx links (nothing was attached then). */
function attachTcx(
  tool: string,
  location: PinLocation,
  netns: string | undefined,
  device: string,
  where: string,
): boolean {
  mkdirSync(join(pinDir(location), 'links'), { recursive: true });
  for (const [hook, program] of HOOKS) {
    const programPin = join(pinDir(location), 'progs', program);
    const result = tryTool([
      tool,
      'attach',
      netnsPath(netns),
      device,
      programPin,
      hook,
      linkPin(location, device, hook),
    ]);
    if (result.status === 3 && hook === 'ingress') return false;
    if (result.error || result.status !== 0)
      throw new EbpfError(
        `attaching ${program} to ${where} failed: ${(result.stderr || String(result.error ?? '')).trim().split('\n')[0] ?? ''}`,
      );
  }
  return true;
}

/**
 * Removes a node's programs from an interface, and nothing else: the node's tcx links on it
 * (which only the node's pins name: without them a link would stay attached) and the tc filters
 * attach() adds (pref 1, handle 1, naming our program), where it used tc. The clsact qdisc stays:
 * on a real node it may hold other components' filters (a CNI's, kube-proxy's), which deleting it
 * would remove with ours. An interface that is gone is fine.
 */
export function detach(netns: string | undefined, device: string, location: PinLocation): void {
  for (const [hook, program] of HOOKS) {
    rmSync(linkPin(location, device, hook), { force: true });
    if (ourTcFilter(netns, device, hook, program))
      tryTool(tc(netns, ['filter', 'del', 'dev', device, hook, 'pref', '1', 'handle', '1', 'bpf']));
  }
}

/** Whether the tc filter at attach()'s place on a hook (pref 1, handle 1) runs our program. */
function ourTcFilter(netns: string | undefined, device: string, hook: string, program: string): boolean {
  const shown = tryTool(tc(netns, ['filter', 'show', 'dev', device, hook, 'pref', '1']));
  if (shown.status !== 0) return false;
  return shown.stdout
    .split('\n')
    .some((line) => / bpf /.test(line) && /handle 0x1 /.test(line) && line.includes(` name ${program} `));
}

/** An interface's index and MAC address in a namespace (undefined when it is not there). */
export function linkOf(
  netns: string | undefined,
  device: string,
): { ifindex: number; mac: Uint8Array } | undefined {
  const ip = ['ip', '-j', 'link', 'show', 'dev', device];
  const shown = tryTool(netns ? ['nsenter', `--net=/run/netns/${netns}`, ...ip] : ip);
  if (shown.status !== 0) return undefined;
  const [link] = JSON.parse(shown.stdout) as { ifindex: number; address?: string }[];
  if (!link?.address) return undefined;
  return { ifindex: link.ifindex, mac: Uint8Array.from(link.address.split(':').map((h) => parseInt(h, 16))) };
}

/** The interfaces of a namespace (undefined when they cannot be listed). */
export function interfaceNames(netns: string | undefined): string[] | undefined {
  const ip = ['ip', '-j', 'link', 'show'];
  const links = tryTool(netns ? ['nsenter', `--net=/run/netns/${netns}`, ...ip] : ip);
  if (links.status !== 0) return undefined;
  return (JSON.parse(links.stdout) as { ifname: string }[]).map((l) => l.ifname);
}

/**
 * Unpins the tcx links of interfaces that are gone (a deleted pod's veth): its link is defunct
 * but its pin would hold it, and a reference to the program, for as long as the node runs.
 */
export function pruneLinks(location: PinLocation, netns: string | undefined): void {
  const dir = join(pinDir(location), 'links');
  if (!existsSync(dir)) return;
  const present = interfaceNames(netns);
  if (present === undefined) return;
  const devices = new Set(present);
  for (const pin of readdirSync(dir)) {
    const device = pin.replace(/-(ingress|egress)$/, '');
    if (!devices.has(device)) rmSync(join(dir, pin), { force: true });
  }
}

/** The interfaces a node's programs are attached to (tc's view), for `down` and for tests. */
export function attachedDevices(netns: string | undefined): string[] {
  const devices = interfaceNames(netns);
  if (devices === undefined) return [];
  const tool = tcxTool();
  return devices.filter((device) => {
    if (tool !== undefined) {
      const links = tryTool([tool, 'query', netnsPath(netns), device, 'ingress']);
      if (links.status === 0 && links.stdout.split('\n').includes(PROGRAMS.fromPod)) return true;
    }
    const filters = tryTool(tc(netns, ['filter', 'show', 'dev', device, 'ingress']));
    return filters.status === 0 && filters.stdout.includes(PROGRAMS.fromPod);
  });
}

/**
 * Unpins a node's programs and maps. Programs attached with tc live on until their interfaces
 * go; tcx links are pinned here too, and unpinning them detaches their programs — so this is for
 * after the interfaces are gone (`lab down` deletes the namespaces first).
 */
export function unload(location: PinLocation): void {
  rmSync(pinDir(location), { recursive: true, force: true });
}

/** Instances pinned under the root (for cleaning up after labs). */
export function pinnedInstances(root = PIN_ROOT): string[] {
  return existsSync(root) ? readdirSync(root) : [];
}

/**
 * The interface a pod address is routed to in a namespace (a routed pod's host-side veth), or
 * undefined when none is (no route, or the address is the node's own).
 */
export function deviceFor(netns: string | undefined, address: string): string | undefined {
  const args = [...(netns ? ['-n', netns] : []), '-j', 'route', 'get', address];
  const result = tryTool(['ip', ...args]);
  if (result.status !== 0) return undefined;
  const [route] = JSON.parse(result.stdout) as { dev?: string; type?: string }[];
  return route?.dev === undefined || route.dev === 'lo' || route.type === 'local' ? undefined : route.dev;
}
