import { Duration } from 'cdk8s';
import { Validator } from '../validation/validate';

/**
 * The kubelet's pod resync period (`syncFrequency`, default 1 min). Each pod worker waits that
 * long plus up to 50% jitter (`workerResyncIntervalJitterFactor` 0.5, pkg/kubelet/pod_workers.go)
 * before it updates the pod's secret volumes again.
 */
export const KUBELET_SYNC_SECONDS = 60;
/** The jitter on top of the sync period: 50% of it. */
export const KUBELET_SYNC_JITTER_SECONDS = 30;
/** The CronJob's starting deadline: a rotation that cannot start in 10 min is skipped. */
export const ROTATION_START_DEADLINE_SECONDS = 600;
/** The rotation Job's active deadline: one run, with its retries, may take at most 10 min. */
export const ROTATION_RUN_DEADLINE_SECONDS = 600;
/** How often the reload sidecar fingerprints the secret directory. */
export const DEFAULT_RELOAD_POLL_SECONDS = 10;

/** One term of the worst-case propagation. */
interface Delay {
  readonly what: string;
  readonly seconds: number;
}

/** What the timing model needs to know about a RotatingGpuSecret. */
export interface TimingInputs {
  /** Whether the library's CronJob rotates the Secret (its deadlines are then terms). */
  readonly rotated: boolean;
  readonly kubeletCacheSeconds: number;
  readonly pollSeconds: number;
  /** The rotation period and the credential's lifetime (as written, for the message), if checked. */
  readonly everySeconds?: number;
  readonly ttlSeconds?: number;
  readonly ttlProp?: Duration;
}

/**
 * The worst case from a scheduled rotation to the new credential in every pod's volume, then in
 * the application's hands; each term is an upper bound (see docs/secrets.md, "Timing"). A
 * credential issued at one scheduled run must last until the run after next has reached every
 * pod: one run may be skipped (it missed startingDeadlineSeconds, with only an Event to show).
 */
export class PropagationModel {
  private readonly base: Delay[];
  private slowestReloadSeconds = 0;

  constructor(
    private readonly v: Validator,
    private readonly inputs: TimingInputs,
  ) {
    this.base = [
      ...(inputs.rotated
        ? [
            { what: 'job start deadline', seconds: ROTATION_START_DEADLINE_SECONDS },
            { what: 'job run deadline', seconds: ROTATION_RUN_DEADLINE_SECONDS },
          ]
        : []),
      { what: 'kubelet sync', seconds: KUBELET_SYNC_SECONDS },
      { what: 'sync jitter', seconds: KUBELET_SYNC_JITTER_SECONDS },
      { what: 'kubelet secret cache', seconds: inputs.kubeletCacheSeconds },
      { what: 'sidecar poll', seconds: inputs.pollSeconds },
    ];
    this.check(0);
  }

  /** The worst case, in seconds, with the slowest reload of any mount so far. */
  get worstCaseSeconds(): number {
    return this.delays(this.slowestReloadSeconds).reduce((sum, d) => sum + d.seconds, 0);
  }

  /** Refuses a reload timeout that would break the lifetime check; call before changing anything. */
  checkReload(timeoutSeconds: number): void {
    if (timeoutSeconds > this.slowestReloadSeconds) this.check(timeoutSeconds);
  }

  /** Records a mount's reload timeout (checked with `checkReload`). */
  addReload(timeoutSeconds: number): void {
    this.slowestReloadSeconds = Math.max(this.slowestReloadSeconds, timeoutSeconds);
  }

  private delays(reloadSeconds: number): Delay[] {
    return [...this.base, ...(reloadSeconds > 0 ? [{ what: 'reload timeout', seconds: reloadSeconds }] : [])];
  }

  private check(reloadSeconds: number): void {
    const { everySeconds: every, ttlSeconds: ttl } = this.inputs;
    if (ttl === undefined || every === undefined) return;
    const delays = this.delays(Math.max(reloadSeconds, this.slowestReloadSeconds));
    const total = 2 * every + delays.reduce((sum, d) => sum + d.seconds, 0);
    if (total > ttl) {
      this.v.fail(
        'rotation.credentialTtl',
        `must cover two rotation periods (a run that misses its start deadline is skipped) plus the worst-case propagation: 2 x ${every}s + (` +
          `${delays.map(d => `${d.what} ${d.seconds}s`).join(' + ')}) = ${total}s; rotate more often or lengthen the credential's lifetime`,
        this.inputs.ttlProp,
      );
    }
  }
}
