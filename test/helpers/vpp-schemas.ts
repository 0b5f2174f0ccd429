/**
 * The VPP documents Palisade writes, checked against the definitions of the programs that read
 * them (vendored in test/fixtures, with their licenses): a `vpp-acl` value against ligato
 * vpp-agent's `ligato.vpp.acl.ACL` message, loaded with protobufjs, in the proto3 JSON mapping
 * with no unknown field and vpp-agent's own range annotations; a `vpptcp` rule against VPP's
 * `session_rule_add_del` message as `session.api` defines it, in the JSON form VPP's own JSON
 * reader (vat2) takes — every field present, enums by name, prefixes as `address/length`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';
import { parseCidr } from '../../src/net/ip.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures');
const PROTO_DIR = join(FIXTURES, 'vpp-agent', 'proto');
const GOOGLE_DIR = dirname(createRequire(import.meta.url).resolve('protobufjs/package.json'));

function loadVppAgentModels(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? join(GOOGLE_DIR, target) : join(PROTO_DIR, target);
  root.loadSync(['ligato/vpp/acl/acl.proto', 'ligato/vpp/interfaces/interface.proto'], { keepCase: true });
  root.resolveAll();
  return root;
}

const MODELS = loadVppAgentModels();
export const ACL_MESSAGE = MODELS.lookupType('ligato.vpp.acl.ACL');
export const INTERFACE_MESSAGE = MODELS.lookupType('ligato.vpp.interfaces.Interface');

const INTEGER_RANGES: Record<string, [number, number]> = {
  uint32: [0, 2 ** 32 - 1],
  fixed32: [0, 2 ** 32 - 1],
  int32: [-(2 ** 31), 2 ** 31 - 1],
  sint32: [-(2 ** 31), 2 ** 31 - 1],
  sfixed32: [-(2 ** 31), 2 ** 31 - 1],
};

const lowerCamel = (name: string): string => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** vpp-agent's `(ligato_options).int_range` on a field, when it has one. */
function intRange(field: protobuf.Field): [number, number] | undefined {
  // protobufjs keeps an aggregate option as one key per member.
  const options = (field.options ?? {}) as Record<string, unknown>;
  const min = options['(ligato_options).int_range.minimum'];
  const max = options['(ligato_options).int_range.maximum'];
  if (min === undefined && max === undefined) return undefined;
  return [
    typeof min === 'number' ? min : Number.NEGATIVE_INFINITY,
    typeof max === 'number' ? max : Number.POSITIVE_INFINITY,
  ];
}

/**
 * What is wrong with `value` as the proto3 JSON form of `type`: fields by proto name or JSON
 * name, none unknown, each of its type (enums by name or number, 32-bit integers in range,
 * vpp-agent's range annotations held).
 */
export function proto3JsonProblems(type: protobuf.Type, value: unknown, path = type.name): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return [`${path}: a ${type.name} must be an object`];
  const problems: string[] = [];
  const byName = new Map<string, protobuf.Field>();
  for (const field of type.fieldsArray) {
    byName.set(field.name, field);
    byName.set(lowerCamel(field.name), field);
  }
  for (const [key, item] of Object.entries(value)) {
    const field = byName.get(key);
    if (!field) {
      problems.push(`${path}.${key}: ${type.name} has no field ${key}`);
      continue;
    }
    if (item === null) continue; // proto3 JSON: the default value
    if (field.repeated) {
      if (!Array.isArray(item)) problems.push(`${path}.${key}: a repeated field must be an array`);
      else
        item.forEach((element, i) => problems.push(...fieldProblems(field, element, `${path}.${key}[${i}]`)));
    } else problems.push(...fieldProblems(field, item, `${path}.${key}`));
  }
  return problems;
}

function fieldProblems(field: protobuf.Field, value: unknown, path: string): string[] {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return proto3JsonProblems(resolved, value, path);
  if (resolved instanceof protobuf.Enum) {
    const names = Object.keys(resolved.values);
    const numbers = Object.values(resolved.values);
    return (typeof value === 'string' && names.includes(value)) ||
      (typeof value === 'number' && numbers.includes(value))
      ? []
      : [`${path}: ${JSON.stringify(value)} is not one of ${names.join(', ')}`];
  }
  if (field.type === 'string') return typeof value === 'string' ? [] : [`${path}: must be a string`];
  if (field.type === 'bool') return typeof value === 'boolean' ? [] : [`${path}: must be true or false`];
  const integer = INTEGER_RANGES[field.type];
  if (integer) {
    // proto3 JSON takes a number or its decimal text.
    const n = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
    const [min, max] = intRange(field) ?? integer;
    return typeof n === 'number' &&
      Number.isInteger(n) &&
      n >= Math.max(min, integer[0]) &&
      n <= Math.min(max, integer[1])
      ? []
      : [`${path}: ${JSON.stringify(value)} is not an integer in ${min}..${max}`];
  }
  return [`${path}: field type ${field.type} is not checked here`];
}

/** An ACL value as vpp-agent reads it: the proto3 JSON checks, and protobufjs's own verify. */
export function aclProblems(json: string): string[] {
  const value: unknown = JSON.parse(json);
  const problems = proto3JsonProblems(ACL_MESSAGE, value);
  if (problems.length > 0) return problems;
  const message = ACL_MESSAGE.fromObject(value as Record<string, unknown>);
  const verified = ACL_MESSAGE.verify(message);
  if (verified) return [`ACL: ${verified}`];
  // Through the wire format and back: nothing is lost that vpp-agent would read.
  const decoded = ACL_MESSAGE.toObject(ACL_MESSAGE.decode(ACL_MESSAGE.encode(message).finish()), {
    enums: String,
  });
  return (decoded.name as string) === (value as { name?: string }).name
    ? []
    : ['ACL: the name did not survive encoding'];
}

interface ApiField {
  readonly type: string;
  readonly name: string;
  /** `string tag[64]`: the bound, NUL included. */
  readonly length?: number;
}

/** A message's fields and the enums of an `.api` file (VPP's API definition language). */
function readApi(file: string, message: string): { fields: ApiField[]; enums: Map<string, string[]> } {
  const text = readFileSync(join(FIXTURES, 'vpp-api', file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  const body = new RegExp(`define\\s+${message}\\s*\\{([^}]*)\\}`).exec(text)?.[1];
  if (body === undefined) throw new Error(`${file} defines no ${message}`);
  const fields = body
    .split(';')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('option'))
    .map((line) => {
      const match = /^(\w+)\s+(\w+)(?:\[(\d+)\])?/.exec(line);
      if (!match) throw new Error(`${file}: cannot read field "${line}"`);
      return { type: match[1]!, name: match[2]!, ...(match[3] ? { length: Number(match[3]) } : {}) };
    });
  const enums = new Map<string, string[]>();
  for (const match of text.matchAll(/enum\s+(\w+)\s*(?::\s*\w+)?\s*\{([^}]*)\}/g))
    enums.set(
      match[1]!,
      match[2]!
        .split(',')
        .map((entry) => entry.trim().split(/\s|=/)[0]!)
        .filter((name) => name !== ''),
    );
  return { fields, enums };
}

const SESSION_RULE = readApi('session.api', 'session_rule_add_del');
/** Fields VPP's JSON form never carries (per connection), and the one the document's key names. */
const NOT_IN_DOCUMENT = new Set(['client_index', 'context', 'appns_index']);
const UNSIGNED: Record<string, number> = { u8: 2 ** 8 - 1, u16: 2 ** 16 - 1, u32: 2 ** 32 - 1 };

/**
 * What is wrong with one rule of a vpptcp document as VPP's `session_rule_add_del` in JSON: every
 * field of the message but `client_index`, `context` (per API connection) and `appns_index` (the
 * pod's application namespace, which VPP numbers when it is created: the document's key names the
 * pod instead), and nothing else.
 */
export function sessionRuleProblems(rule: Record<string, unknown>, path = 'session_rule_add_del'): string[] {
  const problems: string[] = [];
  const fields = SESSION_RULE.fields.filter((f) => !NOT_IN_DOCUMENT.has(f.name));
  const known = new Set(fields.map((f) => f.name));
  for (const key of Object.keys(rule))
    if (!known.has(key)) problems.push(`${path}.${key}: session_rule_add_del has no field ${key}`);
  for (const field of fields) {
    const value = rule[field.name];
    const at = `${path}.${field.name}`;
    if (value === undefined) {
      problems.push(`${at}: missing (VPP's JSON reader requires every field)`);
      continue;
    }
    const max = UNSIGNED[field.type];
    const enumName = /^vl_api_(\w+)_t$/.exec(field.type)?.[1];
    if (max !== undefined) {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max)
        problems.push(`${at}: ${JSON.stringify(value)} is not a ${field.type}`);
    } else if (field.type === 'bool') {
      if (typeof value !== 'boolean') problems.push(`${at}: must be true or false`);
    } else if (field.type === 'string') {
      if (typeof value !== 'string' || Buffer.byteLength(value) >= (field.length ?? Infinity))
        problems.push(`${at}: must be a string shorter than ${field.length ?? '∞'} bytes`);
    } else if (field.type === 'vl_api_prefix_t') {
      const parsed = typeof value === 'string' ? parseCidr(value) : undefined;
      if (!parsed?.ok) problems.push(`${at}: ${JSON.stringify(value)} is not an address/length prefix`);
    } else if (enumName && SESSION_RULE.enums.has(enumName)) {
      const names = SESSION_RULE.enums.get(enumName)!;
      if (typeof value !== 'string' || !names.includes(value))
        problems.push(`${at}: ${JSON.stringify(value)} is not one of ${names.join(', ')}`);
    } else problems.push(`${at}: type ${field.type} is not checked here`);
  }
  return problems;
}

/** Every rule of a vpptcp document (the global table or a pod's local table). */
export function sessionDocumentProblems(json: string): string[] {
  const document = JSON.parse(json) as { rules?: unknown };
  if (!Array.isArray(document.rules)) return ['document: no rules array'];
  return (document.rules as Record<string, unknown>[]).flatMap((rule, i) =>
    sessionRuleProblems(rule, `rules[${i}]`),
  );
}
