/**
 * Where a node's programs should run and whether they do, as the agent verifies it: every
 * interface a route into the node's pod CIDRs leads to (a pod's host-side veth, whether or not
 * policy knows the pod yet — an address without a record is dropped, so a new pod fails closed
 * from the moment its route exists), and, for each, the node's tcx links on both hooks, alive,
 * on that interface, running this node's programs. Read with two `ip` calls and libbpf, not a
 * process per interface: the agent asks every few seconds.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { cidrContains, parseIp, type Cidr } from '../../../net/ip.ts';
import { libbpf } from './libbpf.ts';
import { attachedDevices, deviceFor, HOOKS, linkPin, pinDir } from './loader.ts';
import { tcxTool } from './toolchain.ts';
import type { PinLocation } from './types.ts';

function ipJson(netns: string | undefined, args: readonly string[]): unknown[] | undefined {
  const result = spawnSync('ip', [...(netns ? ['-n', netns] : []), '-j', ...args], { encoding: 'utf8' });
  if (result.status !== 0) return undefined;
  return JSON.parse(result.stdout || '[]') as unknown[];
}

/**
 * The interface each address is routed to in a namespace, from one listing of the routing
 * table (a pod's host route to its veth); an address without a host route is asked of the
 * kernel on its own (`ip route get`). Undefined where none is (no route, the node's own).
 */
export function devicesFor(
  netns: string | undefined,
  addresses: readonly string[],
): Map<string, string | undefined> {
  const host = new Map<string, string>();
  for (const family of ['-4', '-6'])
    for (const route of (ipJson(netns, [family, 'route', 'show']) ?? []) as { dst?: string; dev?: string }[])
      if (route.dev && route.dst && route.dev !== 'lo')
        host.set(route.dst.replace(/\/(32|128)$/, ''), route.dev);
  return new Map(addresses.map((address) => [address, host.get(address) ?? deviceFor(netns, address)]));
}

/** The interfaces routes into the pod CIDRs lead to, in a namespace (sorted). */
export function routedDevices(netns: string | undefined, cidrs: readonly Cidr[]): string[] {
  if (cidrs.length === 0) return [];
  const devices = new Set<string>();
  for (const family of ['-4', '-6'])
    for (const route of (ipJson(netns, [family, 'route', 'show']) ?? []) as {
      dst?: string;
      dev?: string;
    }[]) {
      if (!route.dev || !route.dst || route.dev === 'lo') continue;
      const address = parseIp(route.dst.split('/')[0]!);
      if (address.ok && cidrs.some((cidr) => cidrContains(cidr, address.value))) devices.add(route.dev);
    }
  return [...devices].sort();
}

/**
 * What is wrong with the programs on `devices`, one line each (empty: every one runs the node's
 * programs on both hooks). Interfaces that are gone are not asked about.
 */
export function attachmentProblems(
  location: PinLocation,
  netns: string | undefined,
  devices: readonly string[],
): string[] {
  const links = (ipJson(netns, ['link', 'show']) ?? []) as { ifname: string; ifindex: number }[];
  const ifindex = new Map(links.map((l) => [l.ifname, l.ifindex]));
  const present = devices.filter((d) => ifindex.has(d));
  if (tcxTool() === undefined) {
    // tc filters (kernels without tcx): ask tc about each interface.
    const attached = new Set(attachedDevices(netns));
    return present.filter((d) => !attached.has(d)).map((d) => `no program on ${d}`);
  }
  const lib = libbpf();
  const programs = new Map<string, number>();
  for (const [, program] of HOOKS) {
    const fd = lib.objGet(join(pinDir(location), 'progs', program));
    if (fd < 0) return [`the program ${program} is not pinned under ${pinDir(location)}`];
    try {
      programs.set(program, lib.programId(fd));
    } finally {
      lib.close(fd);
    }
  }
  const problems: string[] = [];
  for (const device of present)
    for (const [hook, program] of HOOKS) {
      const pin = linkPin(location, device, hook);
      if (!existsSync(pin)) {
        problems.push(`no ${program} on ${device} (its ${hook} link is not pinned)`);
        continue;
      }
      const fd = lib.objGet(pin);
      if (fd < 0) {
        problems.push(`the ${hook} link of ${device} cannot be opened`);
        continue;
      }
      try {
        const info = lib.linkInfo(fd);
        if (info.ifindex !== ifindex.get(device)) problems.push(`the ${hook} link of ${device} is not on it`);
        else if (info.programId !== programs.get(program))
          problems.push(`the ${hook} link of ${device} runs another program than ${program}`);
      } finally {
        lib.close(fd);
      }
    }
  return problems;
}
