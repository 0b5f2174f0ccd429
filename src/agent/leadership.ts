/**
 * One writer for a datapath written once for the whole cluster (Kuryr's controller keeping
 * Neutron's security groups): its controllers campaign under one etcd key
 * (`KeyLayout.controllerLeader`, the election of src/etcd/election.ts); the winner runs the agent,
 * the others stand by and say who leads on /readyz (503: a standby takes no traffic and writes
 * nothing). When the leader stops, it resigns and a standby takes over at once; when it dies or
 * is cut off from etcd, a standby takes over once its lease expires (the TTL).
 *
 * Neutron's writes cannot carry etcd's fence, so a leader that loses its lease (paused, cut off)
 * stops writing at once: two controllers writing from different revisions would undo each other's
 * changes. It then exits non-zero, and its supervisor starts it again as a candidate.
 */
import { campaign, type EtcdStore, type Leadership } from '../etcd/index.ts';
import type { AgentLog } from './types.ts';

interface ControllerElectionOptions {
  readonly store: EtcdStore;
  /** The election key (`KeyLayout.controllerLeader(datapath)`). */
  readonly key: string;
  /** This candidate's name in the key (the agent's `--node`). */
  readonly id: string;
  /** How long a dead leader keeps leadership, s. */
  readonly ttlSeconds: number;
  readonly log: AgentLog;
}

export class ControllerElection {
  /** Who leads while this candidate stands by (undefined: not standing by). */
  standingBy: string | undefined;
  private leadership: Leadership | undefined;
  private readonly aborted = new AbortController();

  constructor(private readonly options: ControllerElectionOptions) {}

  /**
   * Waits until this candidate leads; resolves false when `abandon()` came first. `onLost` is
   * called once if leadership is lost afterwards (not after `resign()`).
   */
  async win(onLost: (reason: string) => void): Promise<boolean> {
    const { store, key, id, ttlSeconds, log } = this.options;
    this.standingBy = '(unknown yet)';
    log.info({ key }, `campaigning to lead as ${id}`);
    const leadership = await campaign(store, key, id, {
      ttlSeconds,
      signal: this.aborted.signal,
      onFollowing: (leader) => {
        if (leader !== this.standingBy) log.info({ leader }, `standing by: ${leader} leads`);
        this.standingBy = leader;
      },
    });
    if (!leadership) return false;
    if (this.aborted.signal.aborted) {
      // Won just as the wait was abandoned: leave at once so another candidate takes over.
      await leadership.resign().catch(() => undefined);
      return false;
    }
    this.leadership = leadership;
    this.standingBy = undefined;
    leadership.onLost((reason) => {
      log.error({ reason }, 'leadership lost: stopping before another controller leads');
      onLost(reason);
    });
    log.info({ key }, `leading as ${id}`);
    return true;
  }

  /** Stops waiting to lead (a stop while standing by). */
  abandon(): void {
    this.aborted.abort();
  }

  /** Gives leadership up now (a graceful stop), so a standby takes over without waiting. */
  async resign(): Promise<void> {
    const leadership = this.leadership;
    this.leadership = undefined;
    await leadership?.resign().catch(() => undefined);
  }
}
