/**
 * The nftables renderer's public entry.
 */
export { NftablesRenderer, type NftablesChanges } from './renderer.ts';
export { NodeFleetRenderer } from './fleet.ts';
export { renderTableChain } from './table-chain.ts';
export { FINGERPRINT_SET, TABLE } from './names.ts';
