/**
 * The reflector (Contiv's KSR): campaigns for leadership, then loads what etcd holds, starts its
 * source (the API's informers, resuming from the recorded resourceVersions, or the manifests) and
 * writes through the EtcdWriter until stopped or deposed; a deposed or restarted reflector
 * campaigns again and starts over from etcd's contents, so a takeover rewrites nothing that is
 * already there. A one-shot run (`once`, or manifests without `watch`) syncs once, resigns and
 * returns — within `timeoutMs` when given, else it fails naming what it waited for (the leader
 * that would not step down, or etcd's last error). A write etcd refuses for this identity ends
 * the run with that error: retrying cannot change who we are.
 */
import { hostname } from 'node:os';
import {
  campaign,
  describeEtcdError,
  EtcdAccessError,
  EtcdUnreachableError,
  isEtcdClientError,
} from '../etcd/index.ts';
import type { EtcdStore, Leadership } from '../etcd/types.ts';
import type { KubeApi, NamespaceScope } from '../kube/types.ts';
import type { Diagnostic } from '../model/types.ts';
import { apiPathOf } from './api-path.ts';
import { discoverReflected, listOnce, startInformers } from './api-source.ts';
import { startPageEncoder, type PageEncoder } from './encode-pool.ts';
import { loadFiles, watchFiles } from './file-source.ts';
import type { KeyLayout } from '../reflected/index.ts';
import type { ReflectorStats } from './types.ts';
import { EtcdWriter } from './writer.ts';

export type ReflectorSource =
  | {
      readonly type: 'api';
      readonly api: KubeApi;
      readonly scope: NamespaceScope;
      readonly pageSize?: number;
      /** Worker threads parsing and encoding list pages (default: one per core, at most four; 0: none). */
      readonly encodeThreads?: number;
      /** Each stream's contact with the API (see ApiSourceOptions.health). */
      readonly health?: (stream: string, failure: string | undefined) => void;
    }
  | {
      readonly type: 'files';
      readonly paths: readonly string[];
      readonly watch: boolean;
      readonly maxFileBytes?: number;
    };

export interface ReflectorOptions {
  readonly store: EtcdStore;
  readonly layout: KeyLayout;
  readonly source: ReflectorSource;
  /** Campaign for leadership first (default true); a lone reflector may skip it. */
  readonly elect?: boolean;
  /** This reflector's name in the leader key (default host-pid). */
  readonly id?: string;
  readonly leaseTtlSeconds?: number;
  /** Reconcile once and return (no watch). Manifests without `watch` are always reconciled once. */
  readonly once?: boolean;
  /**
   * A one-shot run gives up after this long (ReflectorTimeoutError): waiting for another leader
   * to step down, or for etcd to take the writes. Default: no deadline.
   */
  readonly timeoutMs?: number;
  readonly maxOps?: number;
  readonly log: (line: string) => void;
  readonly onDiagnostics: (diagnostics: readonly Diagnostic[]) => void;
  /** Called after the initial state is in etcd (each time this reflector starts leading). */
  readonly onSynced?: (stats: ReflectorStats) => void;
  /** Object keys committed at a revision (metrics, benchmarks). */
  readonly onCommitted?: (keys: readonly string[], revision: number) => void;
}

/** A one-shot reflector run did not finish within its `timeoutMs` (one line, for the user). */
export class ReflectorTimeoutError extends Error {}

export class Reflector {
  private readonly abort = new AbortController();
  private writer: EtcdWriter | undefined;
  private dropPending = false;
  /** Who led when this reflector last waited for leadership (for the timeout's message). */
  private followed: string | undefined;
  private lastError: string | undefined;
  private refused: Error | undefined;
  private timedOut = false;
  readonly id: string;

  constructor(private readonly options: ReflectorOptions) {
    this.id = options.id ?? `${hostname()}-${process.pid}`;
  }

  /** The current writer's figures (zeros before it leads). */
  get stats(): ReflectorStats | undefined {
    return this.writer?.stats;
  }

  /** A run that syncs once and returns: `once`, or manifests not watched. */
  private get oneShot(): boolean {
    const { source, once } = this.options;
    return once === true || (source.type === 'files' && !source.watch);
  }

  /** Runs until stop() (or, one-shot, until the state is in etcd). */
  async run(): Promise<ReflectorStats | undefined> {
    const { options } = this;
    const deadline =
      this.oneShot && options.timeoutMs !== undefined
        ? setTimeout(() => {
            this.timedOut = true;
            this.stop({ now: true });
          }, options.timeoutMs)
        : undefined;
    let last: ReflectorStats | undefined;
    try {
      while (!this.abort.signal.aborted) {
        const leadership = options.elect !== false ? await this.campaign() : undefined;
        if (options.elect !== false && !leadership) break;
        const deposed = new AbortController();
        leadership?.onLost((reason) => {
          options.log(`leadership lost (${reason})`);
          deposed.abort();
        });
        last = await this.lead(leadership, deposed);
        if (this.abort.signal.aborted || this.oneShot || this.refused) {
          await leadership?.resign();
          break;
        }
      }
    } finally {
      clearTimeout(deadline);
    }
    if (this.refused) throw this.refused;
    if (this.timedOut) throw new ReflectorTimeoutError(this.timeoutMessage());
    return last;
  }

  /** Waits for leadership (undefined: stopped first); etcd's refusals as one-line errors. */
  private async campaign(): Promise<Leadership | undefined> {
    const { options } = this;
    options.log(`campaigning for leadership as ${this.id}`);
    let leadership: Leadership | undefined;
    try {
      leadership = await campaign(options.store, options.layout.leader, this.id, {
        ttlSeconds: options.leaseTtlSeconds ?? 3,
        signal: this.abort.signal,
        onFollowing: (leader) => {
          this.followed = leader;
          // Our own id there is an earlier run's key (or another reflector given the same --id):
          // never "following" ourselves — it goes when that lease expires.
          options.log(
            leader === this.id
              ? `the leader key holds this reflector's own id ${leader} (an earlier run, or another reflector with the same --id); waiting for its lease to expire`
              : `following ${leader}`,
          );
        },
      });
    } catch (error) {
      throw refusal(error, `campaigning for leadership (${options.layout.leader})`);
    }
    if (leadership) {
      this.followed = undefined;
      options.log(`leading as ${this.id}`);
    }
    return leadership;
  }

  private timeoutMessage(): string {
    const seconds = (this.options.timeoutMs ?? 0) / 1000;
    if (this.followed !== undefined)
      return `reflector ${this.followed} leads under ${this.options.layout.leader} and did not step down within ${seconds} s (stop it, or let it write the change)`;
    return `etcd did not take the changes within ${seconds} s${this.lastError ? ` (last error: ${this.lastError})` : ''}`;
  }

  /**
   * Stops. By default the changes received so far are written first; with `now`, pending writes are
   * dropped (as if the process died) — a successor replays them from the recorded resourceVersions.
   */
  stop(options: { now?: boolean } = {}): void {
    if (options.now) {
      this.dropPending = true;
      this.writer?.stop();
    }
    this.abort.abort();
  }

  /** One term of leadership: load, sync, follow changes until stopped or deposed. */
  private async lead(leadership: Leadership | undefined, deposed: AbortController): Promise<ReflectorStats> {
    const { options } = this;
    const source = options.source;
    let describe: ((object: Record<string, unknown>) => string) | undefined;
    let served: Awaited<ReturnType<typeof discoverReflected>> = [];
    if (source.type === 'api') {
      served = await discoverReflected(source.api, options.log);
      describe = apiPathOf(served);
    }
    const writer = new EtcdWriter({
      layout: options.layout,
      store: options.store,
      ...(leadership ? { fence: leadership.fence } : {}),
      ...(options.maxOps ? { maxOps: options.maxOps } : {}),
      ...(describe ? { describe } : {}),
      ...(source.type === 'api' ? { onDiagnostics: options.onDiagnostics } : {}),
      onFenceLost: () => {
        options.log('another reflector leads: stopping writes');
        deposed.abort();
      },
      onError: (error, wait) => {
        this.lastError = describeEtcdError(error).detail;
        options.log(`etcd: ${this.lastError}; retrying in ${wait} ms`);
      },
      onRefused: (error) => {
        this.refused = refusal(error, `writing under ${options.layout.base}`);
        deposed.abort();
      },
      ...(options.onCommitted ? { onCommitted: options.onCommitted } : {}),
    });
    this.writer = writer;
    await writer.load();
    const started = Date.now();
    let stopSource: () => void = () => undefined;
    const synced = async (): Promise<void> => {
      await writer.idle();
      if (this.dropPending || this.refused) return; // stopped, or refused: not synced
      const stats = writer.stats;
      options.log(
        `synced in ${((Date.now() - started) / 1000).toFixed(1)} s: ${writer.size} keys, ${stats.written} written, ${stats.unchanged} unchanged, ${stats.invalid} invalid, etcd revision ${stats.revision}`,
      );
      options.onSynced?.(stats);
    };
    let encoder: PageEncoder | undefined;
    if (source.type === 'api') {
      encoder = startPageEncoder(options.layout, served, {
        ...(source.encodeThreads !== undefined ? { threads: source.encodeThreads } : {}),
        onFallback: (reason) => options.log(`${reason}; pages are encoded on the main thread`),
      });
      const common = {
        scope: source.scope,
        encoder,
        ...(source.pageSize ? { pageSize: source.pageSize } : {}),
      };
      if (options.once) {
        try {
          await listOnce(source.api, served, writer, common);
        } finally {
          await encoder.close();
        }
        await synced();
        writer.stop();
        return writer.stats;
      }
      const running = startInformers(source.api, served, writer, {
        ...common,
        resumeFrom: (stream) => writer.resourceVersion(stream),
        log: options.log,
        ...(source.health ? { health: source.health } : {}),
      });
      stopSource = () => running.stop();
      void running.synced.then(synced);
    } else {
      const fileOptions = {
        onDiagnostics: options.onDiagnostics,
        ...(source.maxFileBytes !== undefined ? { maxFileBytes: source.maxFileBytes } : {}),
      };
      if (this.oneShot) {
        await loadFiles(source.paths, writer, fileOptions);
        await synced();
        writer.stop();
        return writer.stats;
      }
      stopSource = await watchFiles(source.paths, writer, {
        ...fileOptions,
        onError: (error) => options.log(`reading files: ${error.message}`),
      });
      void synced();
    }
    await new Promise<void>((resolve) => {
      if (this.abort.signal.aborted || deposed.signal.aborted) return resolve();
      this.abort.signal.addEventListener('abort', () => resolve());
      deposed.signal.addEventListener('abort', () => resolve());
    });
    stopSource();
    await encoder?.close();
    if (!deposed.signal.aborted && !this.dropPending) await writer.idle();
    writer.stop();
    return writer.stats;
  }
}

/** An etcd client error while reflecting, as the one-line error a user reads (others unchanged). */
function refusal(error: unknown, doing: string): Error {
  if (error instanceof EtcdAccessError) return error;
  if (!isEtcdClientError(error)) return error instanceof Error ? error : new Error(String(error));
  const { kind, detail } = describeEtcdError(error);
  switch (kind) {
    case 'permission':
      return new EtcdAccessError(`etcd denied ${doing} to this identity (${detail})`);
    case 'auth':
      return new EtcdAccessError(`etcd refused the user name or password (${detail})`);
    case 'tls':
      return new EtcdAccessError(`${doing}: ${detail}`);
    default:
      return new EtcdUnreachableError(`${doing}: etcd did not answer (${detail})`);
  }
}
