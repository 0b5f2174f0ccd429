/**
 * A tier table's rules in the form its decisions are computed from (tier-decisions.ts): one bit
 * per rule in precedence order, and per peer — each group, each CIDR, "anywhere" — the bitmap of
 * the rules naming it; per rule its port set. The decision for a remote's peer class and a
 * port class is then the action of the lowest bit of `peers & ports`, computed once per (table,
 * peer class) for every port class and kept, instead of on every packet.
 */
import type { Cidr } from '../net/ip.ts';
import type { Rule } from '../model/rule.ts';
import { UnsupportedPolicyError } from '../configurator/types.ts';
import { PROTOCOL_INDEX } from './direction-table.ts';
import { wordsFor } from './bitmaps.ts';
import type { StateGroupResolver } from './state-group-resolver.ts';

/** A rule's ports: a protocol index (ANY_PROTOCOL for every one) and an inclusive range. */
const ANY_PROTOCOL = -1;

export interface TierForm {
  /** 32-bit words per bitmap. */
  readonly width: number;
  /** Per rule (bit): ACTION_ALLOW, ACTION_DENY or ACTION_PASS. */
  readonly actions: Uint8Array;
  /** The rules whose peer is anywhere. */
  readonly anywhere: Uint32Array;
  /** Group number (the resolver's) → the rules naming the group. */
  readonly groups: ReadonlyMap<number, Uint32Array>;
  /** Distinct CIDR peers, with the rules naming each. */
  readonly cidrs: readonly { readonly cidr: Cidr; readonly rules: Uint32Array }[];
  /** Per rule: protocol index or ANY_PROTOCOL, first and last port (every port: 0–65535). */
  readonly ports: Int32Array;
}

/** The form of a tier's rules (precedence order), their actions given per rule. */
export function tierForm(
  rules: readonly Rule[],
  actions: Uint8Array,
  direction: 'ingress' | 'egress',
  resolver: Pick<StateGroupResolver, 'idOf'>,
): TierForm {
  const width = wordsFor(rules.length);
  const anywhere = new Uint32Array(width);
  const groups = new Map<number, Uint32Array>();
  const cidrs = new Map<string, { cidr: Cidr; rules: Uint32Array }>();
  const ports = new Int32Array(3 * rules.length);
  rules.forEach((rule, bit) => {
    const remote = direction === 'ingress' ? rule.src : rule.dst;
    let bits: Uint32Array;
    if (remote.kind === 'any') bits = anywhere;
    else if (remote.kind === 'cidr') {
      const text = remote.cidr.text;
      let entry = cidrs.get(text);
      if (!entry) cidrs.set(text, (entry = { cidr: remote.cidr, rules: new Uint32Array(width) }));
      bits = entry.rules;
    } else if (remote.kind === 'outside') {
      throw new UnsupportedPolicyError('the classifier has no form for addresses outside the cluster only');
    } else {
      const group = resolver.idOf(remote.group);
      let entry = groups.get(group);
      if (!entry) groups.set(group, (entry = new Uint32Array(width)));
      bits = entry;
    }
    setBit(bits, bit);
    ports[3 * bit] = rule.protocol === 'ANY' ? ANY_PROTOCOL : PROTOCOL_INDEX[rule.protocol];
    ports[3 * bit + 1] = rule.dstPorts ? rule.dstPorts[0] : 0;
    ports[3 * bit + 2] = rule.dstPorts ? rule.dstPorts[1] : 65535;
  });
  return { width, actions, anywhere, groups, cidrs: [...cidrs.values()], ports };
}

/**
 * The rules each port class can match: per class (a representative protocol index and port,
 * `protocol << 16 | port`), `width` words. Computed again whenever the port classes change.
 */
export function portClassRules(form: TierForm, representatives: readonly number[]): Uint32Array {
  const width = form.width;
  const out = new Uint32Array(representatives.length * width);
  const rules = form.actions.length;
  representatives.forEach((representative, k) => {
    const protocol = representative >>> 16;
    const port = representative & 0xffff;
    for (let bit = 0; bit < rules; bit++) {
      const p = form.ports[3 * bit] as number;
      if (p !== ANY_PROTOCOL && p !== protocol) continue;
      if (port < (form.ports[3 * bit + 1] as number) || port > (form.ports[3 * bit + 2] as number)) continue;
      setBit(out, bit, k * width);
    }
  });
  return out;
}

function setBit(bits: Uint32Array, bit: number, at = 0): void {
  const index = at + (bit >>> 5);
  bits[index] = ((bits[index] as number) | (1 << (bit & 31))) >>> 0;
}
