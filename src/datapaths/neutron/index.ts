/**
 * The Neutron renderer's public entry.
 */
export { renderNeutron, peerGroupName } from './render.ts';
export { NeutronModel, type NeutronPacket } from './interpreter.ts';
export { neutronRequests, type NeutronRequest } from './requests.ts';
export * from './model.ts';
export { neutronTarget } from './target.ts';
