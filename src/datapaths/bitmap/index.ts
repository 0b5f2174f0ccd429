/**
 * The bitmap target's public entry: the classifier kept current as a renderer, and its maps in
 * the seed's schema.
 */
export { ClassifierRenderer } from './renderer.ts';
export { bitmapDocument } from './print.ts';
export { bitmapTarget } from './target.ts';
