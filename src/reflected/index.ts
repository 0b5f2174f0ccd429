/**
 * The reflected cluster in etcd — a contract between the reflector and every consumer: the key
 * layout (layout.ts) and the value codec (codec.ts, prune.ts). Neither side owns it: the reflector
 * writes through it, the agent, `palisade status` and the lab read through it.
 */
export { KeyLayout, DEFAULT_ROOT, REFLECTED_KINDS } from './layout.ts';
export { encodeObject, decodeValue, decodeParsed, valueDigest } from './codec.ts';
export { pruneObject } from './prune.ts';
export type * from './types.ts';
