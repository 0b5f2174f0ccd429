/**
 * The VPPTCP renderer's public entry.
 */
export { renderSessionRules, sessionTransaction, type SessionRendering } from './render.ts';
export { localAllows, globalAllows } from './interpreter.ts';
export * from './model.ts';
export { vpptcpTarget } from './target.ts';
