/**
 * The VPPTCP renderer's public entry.
 */
export { renderSessionRules, sessionTransaction, type SessionRendering } from './render.ts';
export { localAllows, globalAllows, type SessionPacket } from './interpreter.ts';
export * from './model.ts';
export { vpptcpTarget } from './target.ts';
