/**
 * The dataplane layer's public entry: the kernel's tools as typed operations, and the pieces a
 * long-running datapath stands on — deadlines on every command, atomic private state files, and
 * locks the kernel releases when their holder dies.
 */
export {
  run,
  runSync,
  runChecked,
  isRoot,
  DataplaneError,
  DEFAULT_TIMEOUT_MS,
  type ExecResult,
  type ExecOptions,
} from './exec.ts';
export {
  nftRunner,
  execNftRunner,
  libnftablesRunner,
  libnftablesUnavailable,
  recordingRunner,
  type NftRunner,
  type NftRunnerOptions,
} from './nft.ts';
export { openNflog, parseMessages, type NflogPacket, type NflogReader, type NflogOptions } from './nflog.ts';
export { monitorTable, type NftMonitor, type TableTransaction } from './nft-monitor.ts';
export { keepRunning, startTiedProcess, type TiedProcess } from './tied-process.ts';
export { FakeNft, type FakeFault, type FakeTable } from './fake-nft.ts';
export {
  acquireLock,
  acquireDatapathLock,
  DATAPATH_LOCK_ROOT,
  LockBusyError,
  type HeldLock,
  type LockOptions,
} from './lock.ts';
export {
  writeFileAtomic,
  readTrustedFile,
  ensurePrivateDir,
  checkDir,
  restrictMode,
  StateFileError,
} from './files.ts';
