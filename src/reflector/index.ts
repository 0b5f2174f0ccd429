/**
 * The reflector's public entry: the reflector itself and its writer. The key layout and the value
 * codec it writes through are the reflected layer's (src/reflected/).
 */
export {
  Reflector,
  ReflectorTimeoutError,
  type ReflectorOptions,
  type ReflectorSource,
} from './reflector.ts';
export { EtcdWriter } from './writer.ts';
export type * from './types.ts';
