"""Sustained load: writing clients and watchers on one daemon for minutes, then check that no
request failed, every watcher saw every revision exactly once, every acknowledged pod is there
(and every deleted one is not), and the daemon's RSS held level (docs/reliability.md,
"Sustained load"; the load and its checks are podium.cli.bench.loadgen).

Without --server it starts its own `podium serve` (SQLite, in a temporary directory). With
--server, give --pid to sample that daemon's RSS. Exits 1 on any error or violation.

Usage: python ops/sustained-load.py --minutes 5 --writers 50 --watchers 20 [--server HOST:PORT
       [--pid PID]] [--nodes 500] [--warmup-revisions 65536] [--max-lag 2000]
"""

from __future__ import annotations

import argparse
import sys
import time

from podium.cli.bench.loadgen import LoadSpec, run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--minutes", type=float, default=5.0, help="how long to write, after any warm-up"
    )
    parser.add_argument("--writers", type=int, default=50)
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--batch", type=int, default=5, help="pods per put and per delete")
    parser.add_argument("--live", type=int, default=40, help="live pods per writer")
    parser.add_argument(
        "--max-lag",
        type=int,
        default=2000,
        help="writers wait while a watcher is this many revisions behind (0: never)",
    )
    parser.add_argument(
        "--warmup-revisions",
        type=int,
        default=0,
        help="write this many revisions before the clock (and the RSS samples) start",
    )
    parser.add_argument("--server", help="HOST:PORT or unix:PATH of a running daemon")
    parser.add_argument("--pid", type=int, help="the --server daemon's pid, for its RSS")
    args = parser.parse_args()
    spec = LoadSpec(
        seconds=args.minutes * 60,
        writers=args.writers,
        watchers=args.watchers,
        nodes=args.nodes,
        batch=args.batch,
        live=args.live,
        max_lag=args.max_lag,
        warmup_revisions=args.warmup_revisions,
    )
    began = time.perf_counter()
    report = run(spec, server=args.server, pid=args.pid, progress=lambda line: print(line))
    print(*report.lines(), sep="\n")
    print(f"wall time {time.perf_counter() - began:.0f} s; {'PASS' if report.ok else 'FAIL'}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
