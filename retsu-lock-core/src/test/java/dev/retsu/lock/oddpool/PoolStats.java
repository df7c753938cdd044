package dev.retsu.lock.oddpool;

/** The type a test's class loader hides from {@link OddPoolDataSource}. */
public final class PoolStats {}
