/**
 * IP addresses and CIDR prefixes, parsed by hand so that every form Kubernetes rejects or warns
 * about (leading zeros, IPv4-mapped IPv6, host bits set, zones) is seen and reported rather than
 * silently reinterpreted. Values are bigints: obviously correct, and fast enough for analysis.
 */

export type IpFamily = 4 | 6;

/** A parsed address. `value` is the address as an unsigned integer of 32 or 128 bits. */
export interface IpAddress {
  readonly family: IpFamily;
  readonly value: bigint;
}

/** A canonical prefix: host bits are zero, `text` is the canonical textual form (`10.0.0.0/8`). */
export interface Cidr {
  readonly family: IpFamily;
  readonly base: bigint;
  readonly prefix: number;
  readonly text: string;
}

/** Problems found while parsing an address; `fatal` ones mean the value is unusable or rejected. */
interface IpProblem {
  readonly kind: 'invalid' | 'leading-zero' | 'ipv4-mapped' | 'host-bits' | 'non-canonical';
  readonly fatal: boolean;
  readonly message: string;
}

type ParseResult<T> = { ok: true; value: T; problems: IpProblem[] } | { ok: false; problems: IpProblem[] };

const V4_BITS = 32;
const V6_BITS = 128;

export function familyBits(family: IpFamily): number {
  return family === 4 ? V4_BITS : V6_BITS;
}

function invalid<T>(message: string): ParseResult<T> {
  return { ok: false, problems: [{ kind: 'invalid', fatal: true, message }] };
}

function parseV4(text: string, problems: IpProblem[]): bigint | undefined {
  // Scanned by character codes and accumulated as a number (exact below 2^32), made a bigint
  // once: a split and a regular expression per octet were most of the cost of decoding a
  // million ipBlock excepts.
  let value = 0;
  let octets = 0;
  let i = 0;
  let zeroPadded: string[] | undefined;
  for (;;) {
    const start = i;
    let octet = 0;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c < 48 || c > 57) break;
      octet = octet * 10 + (c - 48);
      i++;
    }
    if (i === start || i - start > 3 || octet > 255) return undefined;
    if (i - start > 1 && text.charCodeAt(start) === 48) (zeroPadded ??= []).push(text.slice(start, i));
    value = value * 256 + octet;
    octets++;
    if (i === text.length) break;
    if (text.charCodeAt(i) !== 46 || octets === 4) return undefined; // '.'
    i++;
  }
  if (octets !== 4) return undefined;
  // One problem per address, naming every padded octet (not one message per octet).
  if (zeroPadded) {
    const list = zeroPadded.map((p) => `"${p}"`).join(', ');
    problems.push({
      kind: 'leading-zero',
      fatal: true,
      message: `IPv4 address "${text}" has leading zeros (octet${zeroPadded.length > 1 ? 's' : ''} ${list}), which some parsers read as octal`,
    });
  }
  return BigInt(value);
}

function parseV6(text: string, problems: IpProblem[]): bigint | undefined {
  if (text.includes('%')) return undefined; // zone identifiers have no meaning in policy
  let head = text;
  let v4Tail: bigint | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    v4Tail = parseV4(text.slice(lastColon + 1), problems);
    if (v4Tail === undefined) return undefined;
    // Stand two zero groups in for the dotted tail, then overwrite the low 32 bits below.
    head = text.slice(0, lastColon + 1) + '0:0';
  }
  const doubleColon = head.indexOf('::');
  if (doubleColon !== head.lastIndexOf('::')) return undefined;
  const groupsOf = (s: string): string[] => (s === '' ? [] : s.split(':'));
  let groups: string[];
  if (doubleColon >= 0) {
    const left = groupsOf(head.slice(0, doubleColon));
    const right = groupsOf(head.slice(doubleColon + 2));
    const missing = 8 - left.length - right.length;
    if (missing < 1) return undefined;
    groups = [...left, ...Array<string>(missing).fill('0'), ...right];
  } else {
    groups = groupsOf(head);
  }
  if (groups.length !== 8) return undefined;
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    value = (value << 16n) | BigInt(parseInt(group, 16));
  }
  if (v4Tail !== undefined) value = (value & ~0xffffffffn) | v4Tail;
  if (value >> 32n === 0xffffn) {
    problems.push({
      kind: 'ipv4-mapped',
      fatal: true,
      message: `"${text}" is an IPv4-mapped IPv6 address; write the IPv4 address instead`,
    });
  }
  return value;
}

/** Parses an IPv4 or IPv6 address. Leading zeros and IPv4-mapped forms are fatal problems. */
export function parseIp(text: string): ParseResult<IpAddress> {
  const problems: IpProblem[] = [];
  if (text.includes(':')) {
    const value = parseV6(text, problems);
    if (value === undefined) return invalid(`"${text}" is not a valid IP address`);
    const canonical = formatIp({ family: 6, value });
    // A refused form (IPv4-mapped) is fixed by writing IPv4, not by the IPv6 canonical form, so
    // naming that form beside the error would only point the user the wrong way.
    if (canonical !== text && !problems.some((p) => p.fatal)) {
      problems.push({
        kind: 'non-canonical',
        fatal: false,
        message: `IPv6 address "${text}" is not in canonical form ("${canonical}")`,
      });
    }
    return finish({ family: 6, value }, problems);
  }
  const value = parseV4(text, problems);
  if (value === undefined) return invalid(`"${text}" is not a valid IP address`);
  return finish({ family: 4, value }, problems);
}

function finish<T>(value: T, problems: IpProblem[]): ParseResult<T> {
  if (problems.some((p) => p.fatal)) return { ok: false, problems };
  return { ok: true, value, problems };
}

/** Parses `addr/len`. Host bits are masked off and reported (not fatal), as implementations do. */
export function parseCidr(text: string): ParseResult<Cidr> {
  const slash = text.indexOf('/');
  if (slash < 0) return invalid(`"${text}" is not a CIDR (expected address/prefix-length)`);
  const addr = parseIp(text.slice(0, slash));
  const lengthText = text.slice(slash + 1);
  if (!addr.ok) {
    return addr.problems.every((p) => p.kind === 'invalid')
      ? invalid(`"${text}" is not a valid CIDR`)
      : { ok: false, problems: addr.problems };
  }
  const bits = familyBits(addr.value.family);
  if (!/^[0-9]{1,3}$/.test(lengthText) || (lengthText.length > 1 && lengthText.startsWith('0'))) {
    return invalid(`"${text}" has an invalid prefix length`);
  }
  const prefix = Number(lengthText);
  if (prefix > bits) return invalid(`"${text}" has a prefix length over ${bits}`);
  const problems = [...addr.problems];
  const base = maskAddress(addr.value.value, prefix, bits);
  const made = makeCidr(addr.value.family, base, prefix);
  // The input's own string when it is already canonical: one string kept per CIDR, not two
  // (ten million except entries kept a third of a gigabyte of copies).
  const cidr =
    made.text === text ? { family: made.family, base: made.base, prefix: made.prefix, text } : made;
  if (base !== addr.value.value) {
    const host = `${formatIp(addr.value)}/${bits}`;
    problems.push({
      kind: 'host-bits',
      fatal: false,
      message: `CIDR "${text}" has host bits set and is ambiguous (should be "${cidr.text}" or "${host}"?); using "${cidr.text}"`,
    });
  }
  return { ok: true, value: cidr, problems };
}

export function makeCidr(family: IpFamily, base: bigint, prefix: number): Cidr {
  return { family, base, prefix, text: `${formatIp({ family, value: base })}/${prefix}` };
}

/** The /32 or /128 of one address. */
export function hostCidr(ip: IpAddress): Cidr {
  return makeCidr(ip.family, ip.value, familyBits(ip.family));
}

function maskAddress(value: bigint, prefix: number, bits: number): bigint {
  const hostBits = BigInt(bits - prefix);
  return (value >> hostBits) << hostBits;
}

/** Shift amounts as bigints, made once (BigInt() per test was most of a containment test). */
const SHIFTS: readonly bigint[] = Array.from({ length: 129 }, (_, i) => BigInt(i));

/**
 * True when `ip` lies inside `cidr` (never across families). IPv4 compares 32-bit numbers (no
 * bigint arithmetic): every address and ipBlock test of the matrix and the decoder comes here.
 */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.family !== ip.family) return false;
  if (cidr.family === 4) {
    if (cidr.prefix === 0) return true;
    return (Number(ip.value) ^ Number(cidr.base)) >>> (32 - cidr.prefix) === 0;
  }
  const hostBits = SHIFTS[128 - cidr.prefix] as bigint;
  return ip.value >> hostBits === cidr.base >> hostBits;
}

/** True when `inner` is inside `outer` (equal counts as inside). */
export function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  return (
    outer.family === inner.family &&
    outer.prefix <= inner.prefix &&
    cidrContains(outer, { family: inner.family, value: inner.base })
  );
}

/** A Map or Set key for an address: its family and value (cheaper than its text). */
export const ipKey = (ip: IpAddress): string => `${ip.family}:${ip.value}`;

/** RFC 5952 text for IPv6, dotted quad for IPv4. */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) {
    const v = Number(ip.value);
    return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((ip.value >> BigInt(i * 16)) & 0xffffn));
  // Longest run of two or more zero groups becomes "::" (first one on ties).
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength && j - i >= 2) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  const left = hex.slice(0, bestStart).join(':');
  const right = hex.slice(bestStart + bestLength).join(':');
  return `${left}::${right}`;
}
