package dev.retsu.lock.faults;

import static org.awaitility.Awaitility.await;

import dev.retsu.lock.LeaderContext;
import dev.retsu.lock.LeaderGroup;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LeaderTask;
import dev.retsu.lock.LockKey;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import dev.retsu.lock.faults.FaultCandidate.Arm;
import dev.retsu.lock.faults.FaultCandidate.Phase;
import dev.retsu.lock.testing.TermChecker;
import java.io.PrintStream;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Per-key timelines of {@code LeaderGroup} members, stamped with the machine's one monotonic clock,
 * in the shape the fault suite's {@link TermChecker} reads: ACQUIRED (term, token, backend pid),
 * CHECK (a passed {@code ensureLeader()}), EFFECT, LOST (term, reason), and PHASE (term, phase)
 * when an armed phase begins. Members in this JVM record here; a member in its own JVM ({@link
 * GroupFaultMember}) uses a recorder that prints each event as {@code T <ns> <kind> <key>
 * <fields...>}, and the parent reads those lines back with {@link #accept}. Each key's timeline is
 * checked on its own ({@link #analyse}): no check of a key's term after a newer term of that key
 * began, tokens strictly increasing per key, every term ended with a reason. Thread-safe.
 */
final class GroupRecorder {

  /** Events per key, across members. */
  final Map<LockKey, List<TermChecker.Event>> byKey = new ConcurrentHashMap<>();

  /** The backend pid each key's work saw last, per member. */
  final Map<String, Map<LockKey, Integer>> workPids = new ConcurrentHashMap<>();

  /** Work whose own pg_backend_pid() differed from the term's backend pid. */
  final List<String> wrongSession = new CopyOnWriteArrayList<>();

  /** Losses: member, key, term, reason. */
  final List<Lost> lost = new CopyOnWriteArrayList<>();

  record Lost(String member, LockKey key, long number, LossReason reason) {}

  /** An event of one key. */
  record Stamp(LockKey key, TermChecker.Event event) {

    String term() {
      return event.fields().get(0);
    }
  }

  /**
   * A fault and whom it hit: the terms open at {@code nanos} of {@code member} (null: every member)
   * on the session of backend {@code pid} (null: every session), of {@code key} (null: every key).
   *
   * @param serverSide whether it can free locks without the library (see {@link
   *     TermChecker.Injection})
   */
  record Strike(
      int round,
      String label,
      long nanos,
      boolean serverSide,
      String member,
      Integer pid,
      LockKey key,
      long allowanceNanos) {

    /** A fault that hit every term of a member, or of one of its sessions, open at the moment. */
    Strike(int round, String label, long nanos, boolean serverSide, String member, Integer pid) {
      this(round, label, nanos, serverSide, member, pid, null, 0);
    }

    /** A fault that hit one key's term (no allowance). */
    Strike(
        int round,
        String label,
        long nanos,
        boolean serverSide,
        String member,
        Integer pid,
        LockKey key) {
      this(round, label, nanos, serverSide, member, pid, key, 0);
    }
  }

  private final PrintStream out;
  private final Map<String, AtomicReference<Arm>> taskArms = new ConcurrentHashMap<>();
  private final Map<String, AtomicReference<Arm>> closeArms = new ConcurrentHashMap<>();
  private final Set<String> closing = ConcurrentHashMap.newKeySet();
  private final List<Strike> strikes = new CopyOnWriteArrayList<>();

  /** A recorder that keeps the events. */
  GroupRecorder() {
    this(null);
  }

  private GroupRecorder(PrintStream out) {
    this.out = out;
  }

  /** A recorder in a member's own JVM: it prints each event for the parent's {@link #accept}. */
  static GroupRecorder printingTo(PrintStream out) {
    return new GroupRecorder(out);
  }

  private void add(LockKey key, String member, String kind, String... fields) {
    long now = System.nanoTime();
    if (out != null) {
      synchronized (out) {
        out.println("T " + now + " " + kind + " " + key.value() + " " + String.join(" ", fields));
      }
      return;
    }
    record(key, new TermChecker.Event(now, member, kind, List.of(fields)));
  }

  private void record(LockKey key, TermChecker.Event e) {
    byKey.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(e);
    if (e.kind().equals("LOST")) {
      lost.add(
          new Lost(
              e.member(),
              key,
              Long.parseLong(e.fields().get(0)),
              LossReason.valueOf(e.fields().get(1))));
    }
  }

  /**
   * Records a line a member printed in its own JVM.
   *
   * @return false when it is no event line
   */
  boolean accept(String member, String line) {
    String[] p = line.split(" ");
    if (p.length < 5 || !p[0].equals("T")) {
      return false;
    }
    record(
        LockKey.of(Long.parseLong(p[3])),
        new TermChecker.Event(Long.parseLong(p[1]), member, p[2], List.of(p).subList(4, p.length)));
    return true;
  }

  // ------------------------------------------------------------------ what members run

  /**
   * The listener of one member. When the member is closing and a CLOSE phase is armed, its first
   * {@code onLost(CLOSED)} stamps PHASE and lingers: inside {@code close()}, before the library
   * ends the session.
   */
  LeaderListener listener(String member) {
    return new LeaderListener() {
      @Override
      public void onAcquired(Term term) {
        add(
            term.key(),
            member,
            "ACQUIRED",
            Long.toString(term.number()),
            term.fencingToken().toString(),
            Integer.toString(term.backendPid()));
      }

      @Override
      public void onLost(Term term, LossReason reason, Throwable cause) {
        add(term.key(), member, "LOST", Long.toString(term.number()), reason.name());
        Arm arm =
            reason == LossReason.CLOSED && closing.contains(member)
                ? arms(closeArms, member).getAndSet(null)
                : null;
        if (arm != null) {
          add(term.key(), member, "PHASE", Long.toString(term.number()), Phase.CLOSE.name());
          TimedTask.linger(arm.lingerMs());
        }
      }
    };
  }

  /** A task that takes time ({@link TimedTask}), taking the member's armed task phase if any. */
  LeaderTask timedTask(String member, Random random, TimedTask.Profile profile) {
    TimedTask.Stamps stamps =
        new TimedTask.Stamps() {
          @Override
          public void check(LeaderContext ctx) {
            GroupRecorder.this.check(member, ctx);
          }

          @Override
          public void effect(LeaderContext ctx) {
            GroupRecorder.this.effect(member, ctx);
          }

          @Override
          public void phase(Phase phase, LeaderContext ctx) {
            add(ctx.term().key(), member, "PHASE", number(ctx), phase.name());
          }

          @Override
          public void unlocked(LeaderContext ctx) {
            add(ctx.term().key(), member, "UNLOCKED", number(ctx));
          }
        };
    return ctx ->
        TimedTask.refresh(ctx, random, profile, arms(taskArms, member).getAndSet(null), stamps);
  }

  /** The quick task of one member: check, read the backend pid on the key's view, effect. */
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
    add(ctx.term().key(), member, "CHECK", number(ctx));
  }

  void effect(String member, LeaderContext ctx) {
    add(ctx.term().key(), member, "EFFECT", number(ctx));
  }

  private static String number(LeaderContext ctx) {
    return Long.toString(ctx.term().number());
  }

  private static AtomicReference<Arm> arms(Map<String, AtomicReference<Arm>> m, String member) {
    return m.computeIfAbsent(member, x -> new AtomicReference<>());
  }

  /** Arms a phase of a member: its next task (any key) or, for CLOSE, its close(). */
  void arm(String member, Arm arm) {
    arms(arm.phase() == Phase.CLOSE ? closeArms : taskArms, member).set(arm);
  }

  /** The member is about to be closed: an armed CLOSE phase fires inside its close(). */
  void closing(String member) {
    closing.add(member);
  }

  // ------------------------------------------------------------------ what the test reads

  /** The first event of a kind a member stamped at or after {@code since}, on any key. */
  Optional<Stamp> first(String member, String kind, long since) {
    Stamp best = null;
    for (Map.Entry<LockKey, List<TermChecker.Event>> e : byKey.entrySet()) {
      for (TermChecker.Event ev : e.getValue()) {
        if (ev.member().equals(member)
            && ev.kind().equals(kind)
            && ev.nanos() >= since
            && (best == null || ev.nanos() < best.event().nanos())) {
          best = new Stamp(e.getKey(), ev);
        }
      }
    }
    return Optional.ofNullable(best);
  }

  Stamp awaitStamp(String member, String kind, long since, Duration within) {
    return await()
        .atMost(within)
        .until(() -> first(member, kind, since), Optional::isPresent)
        .orElseThrow();
  }

  /** The backend pid of a member's term of a key, from its ACQUIRED. */
  int pid(LockKey key, String member, String term) {
    return byKey.getOrDefault(key, List.of()).stream()
        .filter(
            e ->
                e.kind().equals("ACQUIRED")
                    && e.member().equals(member)
                    && e.fields().get(0).equals(term))
        .map(e -> Integer.parseInt(e.fields().get(2)))
        .findFirst()
        .orElseThrow();
  }

  /** How many effects a key has had, by anyone. */
  long effects(LockKey key) {
    return byKey.getOrDefault(key, List.of()).stream()
        .filter(e -> e.kind().equals("EFFECT"))
        .count();
  }

  /** How many terms each key had. */
  int terms(LockKey key) {
    return (int)
        byKey.getOrDefault(key, List.of()).stream()
            .filter(e -> e.kind().equals("ACQUIRED"))
            .count();
  }

  /** Waits until every key has done at least {@code n} effects. */
  void awaitEffects(Collection<LockKey> keys, int n, Duration within) {
    await().atMost(within).until(() -> keys.stream().allMatch(k -> effects(k) >= n));
  }

  // ------------------------------------------------------------------ the verdict

  void strike(Strike s) {
    strikes.add(s);
  }

  /**
   * What the check of every key found.
   *
   * @param violations each prefixed with its key; empty when safe
   * @param results per key
   */
  record Result(List<String> violations, Map<LockKey, TermChecker.Result> results) {

    /** The largest residual window of any key (an effect after the next term's start). */
    long residualNanos() {
      return results.values().stream().mapToLong(TermChecker.Result::residualNanos).max().orElse(0);
    }

    /** Every struck term, with what it led to. */
    List<TermChecker.Aftermath> aftermath() {
      return results.values().stream().flatMap(r -> r.aftermath().stream()).toList();
    }
  }

  /**
   * Checks every key's timeline against the strikes recorded so far.
   *
   * @param killed members whose process was killed (their last terms end without a reason)
   */
  Result analyse(Set<String> killed) {
    List<String> violations = new ArrayList<>();
    Map<LockKey, TermChecker.Result> results = new ConcurrentHashMap<>();
    for (Map.Entry<LockKey, List<TermChecker.Event>> e : byKey.entrySet()) {
      List<TermChecker.Event> timeline = new ArrayList<>(e.getValue());
      timeline.sort(Comparator.comparingLong(TermChecker.Event::nanos));
      TermChecker.Result r = TermChecker.analyse(timeline, killed, struck(e.getKey(), timeline));
      results.put(e.getKey(), r);
      for (String v : r.violations()) {
        violations.add(e.getKey() + ": " + v);
      }
    }
    return new Result(violations, results);
  }

  /** The terms of one key's timeline that a strike hit: open at its moment, its member and pid. */
  private List<TermChecker.Injection> struck(LockKey key, List<TermChecker.Event> timeline) {
    List<TermChecker.Injection> out = new ArrayList<>();
    for (Strike s : strikes) {
      if (s.key() != null && !s.key().equals(key)) {
        continue;
      }
      for (TermChecker.Event a : timeline) {
        if (!a.kind().equals("ACQUIRED")
            || a.nanos() > s.nanos()
            || (s.member() != null && !s.member().equals(a.member()))
            || (s.pid() != null && s.pid() != Integer.parseInt(a.fields().get(2)))) {
          continue;
        }
        String term = a.fields().get(0);
        Optional<TermChecker.Event> lost = lostOf(timeline, a.member(), term);
        if (lost.isEmpty() || lost.get().nanos() > s.nanos()) {
          out.add(
              new TermChecker.Injection(
                  s.round(),
                  a.member(),
                  term,
                  s.nanos(),
                  s.serverSide(),
                  s.label(),
                  s.allowanceNanos()));
        }
      }
    }
    return out;
  }

  /** The LOST of a member's term in one key's timeline, if it has ended. */
  static Optional<TermChecker.Event> lostOf(
      List<TermChecker.Event> timeline, String member, String term) {
    return timeline.stream()
        .filter(
            l ->
                l.kind().equals("LOST")
                    && l.member().equals(member)
                    && l.fields().get(0).equals(term))
        .findFirst();
  }

  /**
   * Checks every key's timeline; returns the violations (empty when safe).
   *
   * @param serverFaulted "key|member#number" of terms whose lock a server-side fault freed
   */
  List<String> violations(Set<String> serverFaulted) {
    for (Map.Entry<LockKey, List<TermChecker.Event>> e : byKey.entrySet()) {
      for (TermChecker.Event ev : e.getValue()) {
        if (ev.kind().equals("ACQUIRED")
            && serverFaulted.contains(e.getKey() + "|" + ev.member() + "#" + ev.fields().get(0))) {
          strike(
              new Strike(0, "server-side fault", ev.nanos(), true, ev.member(), null, e.getKey()));
        }
      }
    }
    return analyse(Set.of()).violations();
  }

  /**
   * Whether every one of {@code keys} keys is held by exactly one of the members, each within its
   * fair share ({@code ceil(keys / members)}).
   */
  static boolean balanced(int keys, Collection<LeaderGroup> members) {
    int quota = (keys + members.size() - 1) / members.size();
    Set<LockKey> all = new HashSet<>();
    int sum = 0;
    for (LeaderGroup g : members) {
      List<LockKey> held = g.heldKeys();
      if (held.size() > quota) {
        return false;
      }
      all.addAll(held);
      sum += held.size();
    }
    return all.size() == keys && sum == keys;
  }
}
