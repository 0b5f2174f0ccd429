/**
 * The Neutron renderer's public entry.
 */
export { renderNeutron } from './render.ts';
export { NeutronModel } from './interpreter.ts';
export { neutronRequests } from './requests.ts';
export * from './model.ts';
export { neutronTarget } from './target.ts';
export { NeutronClient, NeutronError, type NeutronCallCounts } from './client.ts';
export { startNeutron, neutronUnavailable, type NeutronServer } from './local-server.ts';
export type { NeutronNodeDatapath } from './node.ts';
export { readNeutronRendering, createPodNetwork } from './readback.ts';
