package dev.retsu.lock.micrometer;

/**
 * Meter names, tag keys, tag values and base units of this module, so dashboards, alerts and code
 * share one spelling.
 *
 * <p>Names are lowercase and dot-separated with no unit in them; each registry adds its own suffix
 * (Prometheus renders {@code retsu.lock.refresh} as {@code retsu_lock_refresh_seconds_*} and a
 * counter as {@code *_total}). The queue-state names are not under {@code retsu.lock}: they are the
 * names the Retsu state collector has always exported, so existing dashboards keep working.
 *
 * <p>Base units: counters count {@link #UNIT_ATTEMPTS attempts}, {@link #UNIT_ACQUISITIONS
 * acquisitions} or {@link #UNIT_TERMS terms}; timers get seconds from the registry (Micrometer
 * timers have no base-unit setting); seconds-valued gauges say {@link #UNIT_SECONDS seconds}. Two
 * kinds of gauge deliberately have none: 0/1 status gauges ({@link #LEADER}, {@link
 * #SESSION_PROXIED}, {@link #HOLDER_FOREIGN}, {@link #QUEUE_STATE_COLLECTION_SUCCESS}), which have
 * no unit, and the queue message counts, because Prometheus appends a gauge's base unit to its name
 * and {@code queue_messages_ready_messages} would break the fixed collector names.
 *
 * <p>Constants only; thread-safe.
 */
public final class Names {

  private Names() {}

  // ---------------------------------------------------------------- LeaderMetrics

  /**
   * Gauge, two series by {@link #TAG_STATE state}. {@link #STATE_LEADER leader} is 1 while the loop
   * leads a term; {@link #STATE_STANDBY standby} is 1 while the loop runs and does not lead. Both
   * are 0 before the loop runs and after it stopped (closed or failed), so a candidate that no
   * longer contends shows 0 in both rather than a standby that will never take over. Prometheus:
   * {@code retsu_lock_leader{state="leader"}}.
   */
  public static final String LEADER = "retsu.lock.leader";

  /**
   * Counter of terms started (lock acquired). Prometheus: {@code retsu_lock_acquisitions_total}.
   */
  public static final String ACQUISITIONS = "retsu.lock.acquisitions";

  /**
   * Counter of standby attempts by {@link #TAG_RESULT result}. Prometheus: {@code
   * retsu_lock_attempts_total}.
   */
  public static final String ATTEMPTS = "retsu.lock.attempts";

  /**
   * Long task timer of the current term: one active task, running since the lock was acquired,
   * while this candidate leads. Prometheus renders it as a summary: {@code
   * retsu_lock_term_seconds_count} (1 while leading, else 0), {@code retsu_lock_term_seconds_sum}
   * (how long the current term has run) and {@code retsu_lock_term_seconds_max}.
   */
  public static final String TERM = "retsu.lock.term";

  /**
   * Timer of the terms this candidate led, one recording when each ends: how long it lasted, from
   * the acquisition to the loss. Prometheus: {@code retsu_lock_term_duration_seconds_count}, {@code
   * _sum}, {@code _max}.
   */
  public static final String TERM_DURATION = "retsu.lock.term.duration";

  /**
   * Timer of waits for leadership, one recording each time this candidate wins a term: how long it
   * waited, from the end of its previous term (or the start of its first attempt) to the
   * acquisition. Prometheus: {@code retsu_lock_acquire_wait_seconds_count}, {@code _sum}, {@code
   * _max}.
   */
  public static final String ACQUIRE_WAIT = "retsu.lock.acquire.wait";

  /**
   * Timer of leader refreshes by {@link #TAG_OUTCOME outcome}. Prometheus: {@code
   * retsu_lock_refresh_seconds_count}, {@code _sum}, {@code _max}.
   */
  public static final String REFRESH = "retsu.lock.refresh";

  /**
   * Counter of ended terms by {@link #TAG_REASON reason}. Prometheus: {@code
   * retsu_lock_lost_terms_total}.
   */
  public static final String LOST_TERMS = "retsu.lock.lost.terms";

  /**
   * Counter of terms that ended by self-fencing (the leader could not prove its session alive in
   * time and stopped first). Prometheus: {@code retsu_lock_self_fenced_terms_total}.
   */
  public static final String SELF_FENCED_TERMS = "retsu.lock.self.fenced.terms";

  /**
   * Gauge: 1 when the session of this candidate's current or last term reached PostgreSQL through a
   * proxy or pooler ({@code dev.retsu.lock.ServerPath#PROXIED}: there only {@code
   * idle_session_timeout} and self-fencing bound a leader that vanished), 0 when it was direct, NaN
   * before the first term or when the path is not known. Prometheus: {@code
   * retsu_lock_session_proxied}.
   */
  public static final String SESSION_PROXIED = "retsu.lock.session.proxied";

  /**
   * Gauge: 1 while the loop's leader watch ({@code leaderWatch} on the loop's builder) last
   * reported the key held by a foreign session, one outside the candidates' role ({@code
   * dev.retsu.lock.LeaderInfo#foreign()}: no candidate can lead until it lets go), 0 when it
   * reported a candidate or nobody, NaN when the loop has no watch or the watch has reported
   * nothing since the bind. Prometheus: {@code retsu_lock_holder_foreign}.
   */
  public static final String HOLDER_FOREIGN = "retsu.lock.holder.foreign";

  // ---------------------------------------------------------------- LeaderGroupMetrics

  /**
   * Gauge: keys this group member leads right now. Prometheus: {@code retsu_lock_group_keys_held}.
   */
  public static final String GROUP_KEYS_HELD = "retsu.lock.group.keys.held";

  /** Gauge: keys in the group (all members share them). */
  public static final String GROUP_KEYS = "retsu.lock.group.keys";

  /** Gauge: members this member saw at its last membership read. */
  public static final String GROUP_MEMBERS = "retsu.lock.group.members";

  /** Gauge: sessions this member has open. */
  public static final String GROUP_SESSIONS = "retsu.lock.group.sessions";

  /**
   * Gauge: keys of the group that the group's leader watch ({@code leaderWatch} on the group's
   * builder) last reported held by a foreign session, one outside the candidates' role ({@code
   * dev.retsu.lock.LeaderInfo#foreign()}: no member can lead such a key until it lets go); NaN when
   * the group has no watch or the watch has reported nothing since the bind. Prometheus: {@code
   * retsu_lock_group_keys_foreign}.
   */
  public static final String GROUP_KEYS_FOREIGN = "retsu.lock.group.keys.foreign";

  /**
   * Function counter: keys this member yielded to rebalance the group. Prometheus: {@code
   * retsu_lock_group_rebalances_total}.
   */
  public static final String GROUP_REBALANCES = "retsu.lock.group.rebalances";

  /** Function counter: key terms this member started. */
  public static final String GROUP_ACQUISITIONS = "retsu.lock.group.acquisitions";

  /**
   * Timer of the key terms this group member led, one recording when each ends, all keys in one
   * series. Prometheus: {@code retsu_lock_group_term_duration_seconds_count}, {@code _sum}, {@code
   * _max}.
   */
  public static final String GROUP_TERM_DURATION = "retsu.lock.group.term.duration";

  /** Counter of ended key terms by {@link #TAG_REASON reason}. */
  public static final String GROUP_LOST_TERMS = "retsu.lock.group.lost.terms";

  /**
   * Gauge per {@link #TAG_KEY key}, only within the series budget: 1 while this member leads the
   * key, else 0.
   */
  public static final String GROUP_KEY_LEADER = "retsu.lock.group.key.leader";

  /**
   * Gauge per {@link #TAG_KEY key}, only within the series budget: seconds the current term of the
   * key has run, 0 when this member does not lead it.
   */
  public static final String GROUP_KEY_TERM = "retsu.lock.group.key.term";

  // ---------------------------------------------------------------- QueueStateMetrics

  /**
   * Counter: runs of one leader-only job ({@code @LeaderOnly} method or leader task) on this
   * candidate, tags {@code lock}, {@code candidate}, {@code job}, {@code outcome=success|failure}.
   * Only the leader runs a job, so summed over replicas it shows that exactly one ran it.
   */
  public static final String JOB_RUNS = "retsu.lock.job.runs";

  /**
   * Gauge: when the job last ran successfully on this candidate, seconds since the epoch; 0 before
   * its first success here.
   */
  public static final String JOB_LAST_SUCCESS = "retsu.lock.job.last.success";

  /** Timer: how long the job's runs took, tags as {@link #JOB_RUNS}. */
  public static final String JOB_DURATION = "retsu.lock.job.duration";

  /** Tag key: the job's name. */
  public static final String TAG_JOB = "job";

  /** Base unit of {@link #JOB_RUNS}. */
  public static final String UNIT_RUNS = "runs";

  /** Gauge per {@link #TAG_QUEUE queue}: messages ready for delivery. */
  public static final String QUEUE_MESSAGES_READY = "queue.messages.ready";

  /** Gauge per {@link #TAG_QUEUE queue}: messages delivered and not yet settled (leased). */
  public static final String QUEUE_MESSAGES_IN_FLIGHT = "queue.messages.in.flight";

  /** Gauge per {@link #TAG_QUEUE queue}: messages scheduled for later delivery (delayed). */
  public static final String QUEUE_MESSAGES_SCHEDULED = "queue.messages.scheduled";

  /** Gauge per {@link #TAG_QUEUE queue}: dead-lettered messages. */
  public static final String QUEUE_MESSAGES_DEAD = "queue.messages.dead";

  /**
   * Gauge per {@link #TAG_QUEUE queue}: age of the oldest ready message, in seconds. Prometheus:
   * {@code queue_oldest_ready_age_seconds}.
   */
  public static final String QUEUE_OLDEST_READY_AGE = "queue.oldest.ready.age";

  /** Gauge: 1 after a successful collection, 0 after a failed one. */
  public static final String QUEUE_STATE_COLLECTION_SUCCESS = "queue.state.collection.success";

  /**
   * Gauge: how long the last successful collection took. Prometheus: {@code
   * queue_state_collection_duration_seconds}.
   */
  public static final String QUEUE_STATE_COLLECTION_DURATION = "queue.state.collection.duration";

  /**
   * Gauge: when the last successful collection finished, in seconds since the epoch. Prometheus:
   * {@code queue_state_collection_last_success_timestamp_seconds}.
   */
  public static final String QUEUE_STATE_COLLECTION_LAST_SUCCESS =
      "queue.state.collection.last.success.timestamp";

  /**
   * Gauge: how many queues the series budget folded into the overflow series. Prometheus: {@code
   * queue_state_folded_queues}.
   */
  public static final String QUEUE_STATE_FOLDED = "queue.state.folded";

  // ---------------------------------------------------------------- tags

  /** Tag: the lock, as named by the user or the key in hex. */
  public static final String TAG_LOCK = "lock";

  /** Tag: the group's name. */
  public static final String TAG_GROUP = "group";

  /** Tag: one key of a group, in hex. */
  public static final String TAG_KEY = "key";

  /** Tag: the candidate id. */
  public static final String TAG_CANDIDATE = "candidate";

  /** Tag of {@link #LEADER}: {@link #STATE_LEADER} or {@link #STATE_STANDBY}. */
  public static final String TAG_STATE = "state";

  /** Tag of {@link #ATTEMPTS}: the attempt result in lower case, e.g. {@code held_elsewhere}. */
  public static final String TAG_RESULT = "result";

  /** Tag of {@link #REFRESH}: {@link #OUTCOME_SUCCESS} or {@link #OUTCOME_FAILURE}. */
  public static final String TAG_OUTCOME = "outcome";

  /** Tag of {@link #LOST_TERMS}: the loss reason in lower case, e.g. {@code session_lost}. */
  public static final String TAG_REASON = "reason";

  /** Tag of the per-queue gauges: the queue name, or {@link #OVERFLOW_QUEUE}. */
  public static final String TAG_QUEUE = "queue";

  /** Value of {@link #TAG_STATE} of the series that is 1 while the loop leads a term. */
  public static final String STATE_LEADER = "leader";

  /**
   * Value of {@link #TAG_STATE} of the series that is 1 while the loop runs and does not lead
   * (contending); 0 while it leads, before it runs, and after it stopped (closed or failed).
   */
  public static final String STATE_STANDBY = "standby";

  /** Value of {@link #TAG_OUTCOME} for a refresh that finished normally. */
  public static final String OUTCOME_SUCCESS = "success";

  /** Value of {@link #TAG_OUTCOME} for a refresh that threw or timed out. */
  public static final String OUTCOME_FAILURE = "failure";

  /**
   * Value of {@link #TAG_QUEUE} for the overflow series that sums the queues past the series
   * budget. A snapshot may not contain a queue of this name.
   */
  public static final String OVERFLOW_QUEUE = "_other";

  // ---------------------------------------------------------------- base units

  /** Base unit of seconds-valued gauges. */
  public static final String UNIT_SECONDS = "seconds";

  /** Base unit of {@link #ATTEMPTS}. */
  public static final String UNIT_ATTEMPTS = "attempts";

  /** Base unit of {@link #ACQUISITIONS}. */
  public static final String UNIT_ACQUISITIONS = "acquisitions";

  /** Base unit of {@link #LOST_TERMS} and {@link #SELF_FENCED_TERMS}. */
  public static final String UNIT_TERMS = "terms";

  /** Base unit of {@link #QUEUE_STATE_FOLDED}. */
  public static final String UNIT_QUEUES = "queues";
}
