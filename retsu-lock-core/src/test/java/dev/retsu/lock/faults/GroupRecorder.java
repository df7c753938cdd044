package dev.retsu.lock.faults;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.testing.TermChecker;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Per-key timelines of several {@code LeaderGroup} members in one JVM, stamped with one monotonic
 * clock, in the shape the fault suite's {@link TermChecker} reads: ACQUIRED (term, token), CHECK (a
 * passed {@code ensureLeader()}), EFFECT, LOST (term, reason). Each key's timeline is checked on
 * its own: at no moment two acting owners of one key, tokens strictly increasing per key.
 * Thread-safe.
 */
final class GroupRecorder {

  /** Events per key, across members. */
  final Map<LockKey, List<TermChecker.Event>> byKey = new ConcurrentHashMap<>();

  /** The backend pid each key's work saw last, per member. */
  final Map<String, Map<LockKey, Integer>> workPids = new ConcurrentHashMap<>();

  /** Work whose own pg_backend_pid() differed from the term's backend pid. */
  final List<String> wrongSession = new CopyOnWriteArrayList<>();

  /** Terms as they started, per member. */
  final List<Term> acquired = new CopyOnWriteArrayList<>();

  /** Losses: member, key, term, reason. */
  final List<Lost> lost = new CopyOnWriteArrayList<>();

  record Lost(String member, LockKey key, long number, LossReason reason) {}

  private void add(LockKey key, String member, String kind, String... fields) {
    byKey
        .computeIfAbsent(key, k -> new CopyOnWriteArrayList<>())
        .add(new TermChecker.Event(System.nanoTime(), member, kind, List.of(fields)));
  }

  /** The listener of one member. */
  LeaderListener listener(String member) {
    return new LeaderListener() {
      @Override
      public void onAcquired(Term term) {
        acquired.add(term);
        add(
            term.key(),
            member,
            "ACQUIRED",
            Long.toString(term.number()),
            term.fencingToken().toString());
      }

      @Override
      public void onLost(Term term, LossReason reason, Throwable cause) {
        lost.add(new Lost(member, term.key(), term.number(), reason));
        add(term.key(), member, "LOST", Long.toString(term.number()), reason.name());
      }
    };
  }

  /** The task of one member: check, read the backend pid on the key's view, effect. */
  LeaderTask task(String member) {
    return ctx -> {
      ctx.ensureLeader();
      check(member, ctx);
      int pid =
          ctx.withConnection(
              c -> {
                try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                  rs.next();
                  return rs.getInt(1);
                }
              });
      workPids.computeIfAbsent(member, m -> new ConcurrentHashMap<>()).put(ctx.term().key(), pid);
      if (pid != ctx.term().backendPid()) {
        wrongSession.add(member + " " + ctx.term().key() + " ran on " + pid);
      }
      ctx.ensureLeader();
      check(member, ctx);
      effect(member, ctx);
    };
  }

  void check(String member, LeaderContext ctx) {
    add(ctx.term().key(), member, "CHECK", Long.toString(ctx.term().number()));
  }

  void effect(String member, LeaderContext ctx) {
    add(ctx.term().key(), member, "EFFECT", Long.toString(ctx.term().number()));
  }

  /**
   * Checks every key's timeline; returns the violations (empty when safe).
   *
   * @param serverFaulted "key|member#number" of terms whose lock a server-side fault freed
   */
  List<String> violations(Set<String> serverFaulted) {
    return TermChecker.analyseEach(
            byKey,
            Set.of(),
            (key, acquired) ->
                serverFaulted.contains(
                    key + "|" + acquired.member() + "#" + acquired.fields().get(0)))
        .stream()
        .map(TermChecker.Violation::text)
        .toList();
  }

  /** How many terms each key had. */
  int terms(LockKey key) {
    return (int)
        byKey.getOrDefault(key, List.of()).stream()
            .filter(e -> e.kind().equals("ACQUIRED"))
            .count();
  }
}
