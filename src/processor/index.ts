/**
 * The processor layer's public entry.
 */
export { affectedPods, sameShape, type Selections } from './affected.ts';
