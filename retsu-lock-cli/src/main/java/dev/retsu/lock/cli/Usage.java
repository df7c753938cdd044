package dev.retsu.lock.cli;

/** The {@code --help} text; docs/cli.md says the same at length. */
final class Usage {

  private Usage() {}

  static final String TEXT =
      """
      retsu-lock-cli: who leads a retsu-lock key, on PostgreSQL advisory locks.

      Usage:
        java -jar retsu-lock-cli-<version>-all.jar [who] --url URL KEY [--candidate-role ROLE]
                                                   [--json]
        java -jar retsu-lock-cli-<version>-all.jar [who] --url URL KEY --watch [--json]
        java -jar retsu-lock-cli-<version>-all.jar evict --url URL KEY [--json] [--yes]

      Commands:
        who     (the default) print the holder: candidate, pid, token, term, since when, and its
                pg_stat_activity row; with --watch, stream every change until Ctrl-C. A holder
                whose session is not of the candidates' role is shown as a foreign session with
                its role, never as a candidate, whatever its application_name says. Then
                the sessions queued on the key, next to be granted first, and a warning for
                each foreign one: the server grants it the key when its turn comes
        evict   terminate the holder's session (pg_terminate_backend) after asking; its loop
                ends the term and the key goes to the next candidate

      Connection:
        --url URL           jdbc:postgresql://host[:port]/database[?user=..&password=..]
        --user USER         else the URL's user, else $PGUSER
        --password PASS     else the URL's password, else $PGPASSWORD (prefer the variable:
                            a command line is visible to other users of the host)

      Key (exactly one):
        --key BIGINT                 an explicit bigint key, LockKey.of(value)
        --namespace NS --name NAME   LockKey.named(NS, NAME): SHA-256 of "NS:NAME", 8 bytes
        --group NS --partitions N    a LeaderGroup.partitioned(NS, N): who owns which key

      Trust:
        --candidate-role ROLE  (who, also with --watch) the role the candidates log in as; a
                               session's name counts only with it. Default: the CLI's own
                               login role

      Flags:
        --json     one JSON object per line
        --watch    (who) stream changes until Ctrl-C; one line per change
        --yes      (evict) do not ask; without it evict refuses when there is no terminal
        --help     this text

      Exit codes:
        0  a holder found (a candidate, or a foreign session), evicted, or a watch stopped;
           sessions queued on the key never change the code
        1  database error (the SQLState is printed)
        2  usage error
        3  nobody holds the key (or none of the group's keys)
        4  evict not confirmed (answer not "yes", or no terminal and no --yes)
        5  evict: the holder changed before the eviction; nothing terminated
      """;
}
