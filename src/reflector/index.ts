/**
 * The reflector's public entry: the reflector itself, and for consumers (the node agent) the key
 * layout and the value codec.
 */
export {
  Reflector,
  ReflectorTimeoutError,
  type ReflectorOptions,
  type ReflectorSource,
} from './reflector.ts';
export { EtcdWriter, type WriterOptions } from './writer.ts';
export { KeyLayout, LAYOUT_VERSION, DEFAULT_ROOT, REFLECTED_KINDS } from './layout.ts';
export { encodeObject, decodeValue, decodeParsed } from './codec.ts';
export { pruneObject } from './prune.ts';
export type * from './types.ts';
