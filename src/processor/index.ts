/**
 * The processor layer's public entry.
 */
export { affectedPods, sameShape } from './affected.ts';
