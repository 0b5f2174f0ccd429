/**
 * The node agent's drift handling: when the datapath is verified against what was realized (on
 * a timer, and whenever its notifications suspect another writer), what a verification does with
 * a difference (repaired in one transaction, counted, logged, reported), and how a verification
 * that finds the datapath right again ends a failed repair (recovery).
 *
 * Apart from agent.ts because it is a concern of its own with its own state (the schedule, the
 * repairs and the last difference) that the agent's list/watch/realize loop only has to run:
 * the pump calls `reconcile` while a verification is `due`, and each reads the other's state
 * through the few callbacks below.
 */
import type { StatusLease } from './status-lease.ts';
import type { AgentLog, AgentMetrics, AgentState, Realizer } from './types.ts';

interface DriftRepairOptions {
  readonly realizer: Pick<Realizer, 'reconcile' | 'onSuspect'>;
  /** Between verifications on the timer (0: none, only when another writer is suspected). */
  readonly verifyIntervalMs: number;
  readonly log: AgentLog;
  readonly metrics: AgentMetrics | undefined;
  readonly status: Pick<StatusLease, 'schedule'>;
  /** The agent's state now: its phase, staleness and unreadable keys decide a recovery. */
  readonly state: () => AgentState;
  /** Runs the agent's pump, which verifies while a verification is `due`. */
  readonly kick: () => void;
  /** The realizer must be given a whole listing before it can verify again. */
  readonly relistNeeded: () => void;
  /** Forgets the agent's failures and last error, and sets its phase. */
  readonly recover: (phase: 'ready' | 'degraded') => void;
}

export class DriftRepair {
  /** The datapath is to be verified against what was realized (timer, or a suspected writer). */
  private verifyDue = false;
  private repairs = 0;
  private lastDrift: { what: string; at: string } | undefined;
  private verifyTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: DriftRepairOptions) {
    options.realizer.onSuspect((why) => {
      if (this.stopped) return;
      options.log.debug({ why }, 'the datapath may have been changed by another writer: verifying');
      this.verifyDue = true;
      options.kick();
    });
  }

  /** A verification is waiting for the pump. */
  get due(): boolean {
    return this.verifyDue;
  }

  /** The drift fields of the agent's state: repairs made, and the last difference repaired. */
  get state(): Pick<AgentState, 'driftRepairs' | 'lastDrift'> {
    return { driftRepairs: this.repairs, ...(this.lastDrift ? { lastDrift: this.lastDrift } : {}) };
  }

  /** Starts the timer (once the agent has listed: nothing is verified before that). */
  start(): void {
    if (this.options.verifyIntervalMs > 0)
      this.verifyTimer = setInterval(() => {
        this.verifyDue = true;
        this.options.kick();
      }, this.options.verifyIntervalMs);
  }

  /** No more verifications are asked for (the agent stops). */
  stop(): void {
    this.stopped = true;
    if (this.verifyTimer) clearInterval(this.verifyTimer);
  }

  /**
   * Verifies the datapath against what was realized and repairs a difference. A repair that
   * failed leaves the agent failing (not ready) and is verified again at the next retry; only a
   * verification that ran and found the datapath right (or repaired it) makes it ready again. A
   * realizer that must start again from a whole listing is given one first.
   */
  async reconcile(): Promise<void> {
    const { realizer, log, metrics, status } = this.options;
    this.verifyDue = false;
    let differences: readonly string[] | undefined;
    try {
      differences = await realizer.reconcile();
    } catch (error) {
      this.verifyDue = true;
      if ((error as { relist?: unknown }).relist === true) this.options.relistNeeded();
      throw error;
    }
    if (differences === undefined) return;
    if (this.options.state().phase === 'failing') this.recovered();
    if (differences.length === 0) return;
    this.repairs++;
    this.lastDrift = { what: differences.join('; '), at: new Date().toISOString() };
    metrics?.driftRepaired();
    log.warn(
      { differences, repairs: this.repairs },
      `the datapath differed from what was realized (${differences[0]}${differences.length > 1 ? `, and ${differences.length - 1} more` : ''}): repaired`,
    );
    status.schedule();
  }

  /** The datapath holds what was last realized again, after a failed repair. */
  private recovered(): void {
    const { log, metrics, status } = this.options;
    const phase = this.options.state().unreadableCount > 0 ? 'degraded' : 'ready';
    this.options.recover(phase);
    log.info({}, `the datapath holds what was realized again: ${phase}`);
    metrics?.state(phase === 'ready', this.options.state().stale);
    status.schedule();
  }
}
