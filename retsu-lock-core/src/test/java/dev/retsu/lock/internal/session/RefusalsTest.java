package dev.retsu.lock.internal.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.UnsafeSessionException;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The advice of a pooler refusal names what to change for the endpoint the client connected to, and
 * the endpoints that providers document as transaction-mode poolers are refused before any
 * statement; nothing else is.
 */
class RefusalsTest {

  private static final LockKey KEY = LockKey.of(42L);

  private static Optional<UnsafeSessionException> upFront(String host, int port) {
    return Refusals.transactionEndpoint(ServerRoute.connectedTo(host, port), KEY, "c");
  }

  private static String advice(String host, int port) {
    return Refusals.sharedBackend(
            "Backend 7 already holds this lock before we took it",
            ServerRoute.connectedTo(host, port),
            KEY,
            "c")
        .getMessage();
  }

  @Test
  void supavisorsTransactionPortIsRefusedBeforeAnyStatementWithThePortToUse() {
    assertThat(upFront("aws-0-eu-central-1.pooler.supabase.com", 6543))
        .hasValueSatisfying(
            e -> {
              assertThat(e.reason()).isEqualTo(LossReason.POOLER_DETECTED);
              assertThat(e.getMessage())
                  .contains("aws-0-eu-central-1.pooler.supabase.com:6543 is a transaction-mode")
                  .contains("use port 5432 (session mode) or the direct connection");
            });
    assertThat(upFront("db.abcdefghijklmnop.supabase.co", 6543)).isPresent();
    assertThat(upFront("aws-0-eu-central-1.pooler.supabase.com", 5432))
        .as("Supavisor's session mode")
        .isEmpty();
  }

  @Test
  void neonPoolerHostsAreRefusedBeforeAnyStatementWithTheDirectHost() {
    assertThat(upFront("ep-cool-darkness-123456-pooler.us-east-2.aws.neon.tech", 5432))
        .hasValueSatisfying(
            e -> assertThat(e.getMessage()).contains("remove -pooler from the host name"));
    assertThat(upFront("ep-cool-darkness-123456.us-east-2.aws.neon.tech", 5432)).isEmpty();
  }

  @Test
  void azuresBuiltInPgBouncerIsNotRefusedUpFrontButAdvisedWhenItShares() {
    // Its pool mode is a server parameter: session mode there is safe, so only a shared backend
    // seen by the locking statement refuses it.
    assertThat(upFront("myserver.postgres.database.azure.com", 6432)).isEmpty();
    assertThat(advice("myserver.postgres.database.azure.com", 6432))
        .contains("Azure: port 6432 is the built-in PgBouncer")
        .contains("use port 5432, or set pgbouncer.pool_mode to SESSION");
  }

  @Test
  void anyOtherPoolerGetsThePgBouncerAdvice() {
    assertThat(upFront("pgbouncer.internal", 6432)).isEmpty();
    assertThat(upFront("127.0.0.1", 6543)).isEmpty();
    assertThat(advice("pgbouncer.internal", 6432))
        .startsWith("POOLER_DETECTED: Backend 7 already holds this lock before we took it")
        .contains(
            "Connect directly, or through a pooler in session mode (PgBouncer: pool_mode ="
                + " session).");
    assertThat(advice("myserver.postgres.database.azure.com", 5432))
        .as("Azure's direct port")
        .doesNotContain("Azure");
  }
}
