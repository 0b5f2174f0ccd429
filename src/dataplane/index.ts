/**
 * The dataplane layer's public entry: the kernel's tools as typed operations, and the pieces a
 * long-running datapath stands on — deadlines on every command, atomic private state files, and
 * locks the kernel releases when their holder dies.
 */
export { run, runSync, runChecked, isRoot, DataplaneError, DEFAULT_TIMEOUT_MS } from './exec.ts';
export {
  nftRunner,
  execNftRunner,
  libnftablesRunner,
  libnftablesUnavailable,
  recordingRunner,
  type NftRunner,
} from './nft.ts';
export { openNflog, type NflogPacket, type NflogReader } from './nflog.ts';
export { monitorTable } from './nft-monitor.ts';
export { keepRunning, startTiedProcess, type TiedProcess } from './tied-process.ts';
export { FakeNft, type FakeTable } from './fake-nft.ts';
export {
  acquireLock,
  acquireDatapathLock,
  DATAPATH_LOCK_ROOT,
  LockBusyError,
  type HeldLock,
} from './lock.ts';
export { writeFileAtomic, readTrustedFile, ensurePrivateDir, StateFileError } from './files.ts';
