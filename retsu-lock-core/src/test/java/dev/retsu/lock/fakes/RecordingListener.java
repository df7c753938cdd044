package dev.retsu.lock.fakes;

import dev.retsu.lock.AttemptResult;
import dev.retsu.lock.LeaderListener;
import dev.retsu.lock.LossReason;
import dev.retsu.lock.Term;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

/** Records every listener call, for assertions. */
public final class RecordingListener implements LeaderListener {

  public record Event(String kind, Term term, Object detail, Throwable error, String thread) {}

  public final List<Event> events = new CopyOnWriteArrayList<>();

  @Override
  public void onAttempt(AttemptResult result, Duration duration, Throwable error) {
    events.add(new Event("attempt", null, result, error, Thread.currentThread().getName()));
  }

  @Override
  public void onAcquired(Term term) {
    events.add(new Event("acquired", term, null, null, Thread.currentThread().getName()));
  }

  @Override
  public void onRefreshSucceeded(Term term, Duration duration) {
    events.add(new Event("refreshed", term, duration, null, Thread.currentThread().getName()));
  }

  @Override
  public void onRefreshFailed(Term term, Duration duration, Throwable error) {
    events.add(new Event("refreshFailed", term, duration, error, Thread.currentThread().getName()));
  }

  @Override
  public void onLost(Term term, LossReason reason, Throwable cause) {
    events.add(new Event("lost", term, reason, cause, Thread.currentThread().getName()));
  }

  public List<Event> of(String kind) {
    return events.stream().filter(e -> e.kind().equals(kind)).collect(Collectors.toList());
  }

  public List<Term> acquired() {
    return of("acquired").stream().map(Event::term).collect(Collectors.toList());
  }

  public List<LossReason> lossReasons() {
    return of("lost").stream().map(e -> (LossReason) e.detail()).collect(Collectors.toList());
  }

  public List<String> kinds() {
    return events.stream().map(Event::kind).collect(Collectors.toList());
  }
}
