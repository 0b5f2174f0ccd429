/**
 * The dataplane layer's public entry: the kernel's tools as typed operations.
 */
export {
  run,
  runSync,
  runChecked,
  isRoot,
  DataplaneError,
  type ExecResult,
  type ExecOptions,
} from './exec.ts';
export { nftRunner, persistentNftRunner, recordingRunner, type NftRunner } from './nft.ts';
