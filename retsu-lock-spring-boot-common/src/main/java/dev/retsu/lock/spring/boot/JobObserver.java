package dev.retsu.lock.spring.boot;

/**
 * Counts the leader-only work of one leader or group: each run of its task and of each of its
 * {@code @LeaderOnly} methods, by job name. The metrics auto-configuration supplies one backed by
 * {@code LeaderJobMetrics}; without Micrometer it is {@link #NO_OP}. Thread-safe.
 */
interface JobObserver {

  /** Counts nothing. */
  JobObserver NO_OP = name -> Job.NO_OP;

  /**
   * Returns the job of that name, registering its meters the first time.
   *
   * @param name the job: {@code task}, or {@code <bean class>.<method>}
   * @return the job
   */
  Job job(String name);

  /** Removes what this observer registered. Idempotent. */
  default void close() {}

  /** One job's runs. */
  interface Job {

    /** Counts nothing. */
    Job NO_OP =
        new Job() {
          @Override
          public void succeeded(long nanos) {}

          @Override
          public void failed(long nanos, Throwable error) {}
        };

    /**
     * A run ended normally.
     *
     * @param nanos how long it ran
     */
    void succeeded(long nanos);

    /**
     * A run threw.
     *
     * @param nanos how long it ran
     * @param error what it threw
     */
    void failed(long nanos, Throwable error);

    /**
     * Runs a body and counts it.
     *
     * @param body the run
     * @param <T> its result
     * @return its result
     * @throws Throwable what it threw, after counting it as a failure
     */
    default <T> T observe(Body<T> body) throws Throwable {
      long start = System.nanoTime();
      try {
        T result = body.run();
        succeeded(System.nanoTime() - start);
        return result;
      } catch (Throwable t) {
        failed(System.nanoTime() - start, t);
        throw t;
      }
    }
  }

  /** A run that may throw anything. */
  @FunctionalInterface
  interface Body<T> {
    T run() throws Throwable;
  }
}
