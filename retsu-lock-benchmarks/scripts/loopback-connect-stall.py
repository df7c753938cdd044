#!/usr/bin/env python3
"""How often a new loopback TCP connection to PostgreSQL gets no SYN-ACK at all.

Opens --count connections to --host:--port one after another, each with a --timeout connect
timeout. With --close server-first (the default) each connection sends a startup packet with an
unknown protocol version, so the server answers with an error and closes first, as it does for a
terminated or timed-out backend; with --close client-first the client closes at once. Prints the
slowest connect, every connect that took over half a second or failed, and appends one line to
--out with the kernel, the counts and the machine load. No PostgreSQL library is needed.

  python3 retsu-lock-benchmarks/scripts/loopback-connect-stall.py --port 5432 --count 20000 --out stalls.md
"""
import argparse, os, platform, socket, struct, time


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--host", default="127.0.0.1")
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--count", type=int, default=20000)
    a.add_argument("--timeout", type=float, default=12.0)
    a.add_argument("--close", choices=["server-first", "client-first"], default="server-first")
    a.add_argument("--out", required=True)
    o = a.parse_args()
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    slow, failed, worst = [], 0, 0.0
    started = time.time()
    for i in range(o.count):
        s = socket.socket()
        s.settimeout(o.timeout)
        t = time.time()
        try:
            s.connect((o.host, o.port))
        except OSError as e:
            failed += 1
            slow.append((i, f"failed after {time.time() - t:.1f} s: {e}"))
            s.close()
            continue
        took = time.time() - t
        worst = max(worst, took)
        if took > 0.5:
            slow.append((i, f"{took:.3f} s"))
        if o.close == "server-first":
            s.sendall(struct.pack("!ii", 8, 12345))  # protocol 0.12345: the server refuses, closes
            try:
                while s.recv(1000):
                    pass
            except OSError:
                pass
        s.close()
    line = (f"| {platform.release()} | {o.close} | {o.count} | {failed} | {worst * 1000:.1f} | "
            f"{time.time() - started:.0f} | {os.cpu_count()} cores, load {load_before} |")
    with open(o.out, "a") as f:
        f.write(line + "\n")
    print(line)
    for i, what in slow[:20]:
        print(f"  connect {i}: {what}")


if __name__ == "__main__":
    main()
