/**
 * The VPP ACL renderer's public entry.
 */
export { renderAcls, aclTransaction, type AclRendering } from './render.ts';
export { interfaceAllows, uplinkAllows, ReflectionSessions } from './interpreter.ts';
export * from './model.ts';
export { vppAclTarget } from './target.ts';
