#!/usr/bin/env python3
"""The example collector's WAIT takeover after kill -9, to its "leadership acquired" line.

Starts one collector of the examples jar (takeover WAIT, 1 s interval), then for every kill: a
fresh standby, a wait until it is queued on the key in pg_locks plus one second, SIGKILL of the
leader, and the time from the kill to the standby's "leadership acquired" line (the line's own
millisecond timestamp, and when this script read it). The standby then leads for the next kill.
Appends the medians to --out with the commit, the jar, the pool size and the machine load.

  python3 retsu-lock-benchmarks/scripts/example-takeover.py --jar retsu-lock-examples/target/retsu-lock-examples.jar \
      --host 127.0.0.1 --port 5432 --user postgres --kills 10 --pool-size 4 --out /tmp/example-takeover.md

Needs a running PostgreSQL that the user reaches without a password prompt, psql on PATH (or
--psql), Java on PATH, and nothing else on the collectors' key.
"""
import argparse, datetime, os, signal, statistics, subprocess, threading, time

LINE = "queue state metrics collector leadership acquired"


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--jar", required=True)
    a.add_argument("--host", default="127.0.0.1")
    a.add_argument("--port", default="5432")
    a.add_argument("--user", default="postgres")
    a.add_argument("--database", default="postgres")
    a.add_argument("--kills", type=int, default=10)
    a.add_argument("--pool-size", default="4")
    a.add_argument("--psql", default="psql")
    a.add_argument("--out", required=True)
    o = a.parse_args()
    url = f"jdbc:postgresql://{o.host}:{o.port}/{o.database}"

    def start(name, port):
        env = dict(os.environ, RETSU_DATABASE__URL=url, RETSU_DATABASE__USER=o.user)
        p = subprocess.Popen(
            ["java", "-jar", o.jar, "collector", "--takeover", "wait", "--interval", "1s",
             "--management-port", str(port), "--candidate-id", name, "--pool-size", o.pool_size],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, bufsize=1)
        st = {"p": p, "acq": None}

        def read():
            for line in p.stdout:
                if line.rstrip().endswith(LINE) and st["acq"] is None:
                    st["acq"] = (time.time(), line.split()[0])

        threading.Thread(target=read, daemon=True).start()
        return st

    def queued():
        r = subprocess.run(
            [o.psql, "-h", o.host, "-p", o.port, "-U", o.user, "-d", o.database, "-Atc",
             "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"],
            capture_output=True, text=True)
        return r.stdout.strip() == "1"

    def until(check, seconds=60):
        end = time.time() + seconds
        while time.time() < end:
            if check():
                return
            time.sleep(0.05)
        raise SystemExit("timed out")

    load_before = open("/proc/loadavg").read().split()[:3]
    leader = start("bench-a", 24401)
    until(lambda: leader["acq"] is not None)
    logged, read = [], []
    for i in range(o.kills):
        standby = start(f"bench-{i}", 24402 + i % 2)
        until(queued)
        time.sleep(1.0)
        t0 = time.time()
        leader["p"].send_signal(signal.SIGKILL)
        until(lambda: standby["acq"] is not None, 30)
        hh, mm, ss = standby["acq"][1].split(":")
        day = datetime.datetime.fromtimestamp(t0).replace(hour=int(hh), minute=int(mm), second=0,
                                                          microsecond=0)
        logged.append((day.timestamp() + float(ss) - t0) * 1000)
        read.append((standby["acq"][0] - t0) * 1000)
        leader["p"].wait()
        leader = standby
    leader["p"].send_signal(signal.SIGTERM)
    leader["p"].wait()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with open(o.out, "a") as f:
        f.write(f"| {commit} | {os.path.basename(o.jar)} | {o.pool_size} | {o.kills} | "
                f"{statistics.median(logged):.1f} | {max(logged):.1f} | "
                f"{statistics.median(read):.1f} | {os.cpu_count()} cores, load "
                f"{' '.join(load_before)} -> {' '.join(open('/proc/loadavg').read().split()[:3])} |\n")
    print(f"pool {o.pool_size}: median {statistics.median(logged):.1f} ms (line), "
          f"{statistics.median(read):.1f} ms (read), worst {max(logged):.1f} ms")


if __name__ == "__main__":
    main()
