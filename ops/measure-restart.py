"""Time a restart: fill a database with N nodes and M bound pods through a real daemon, kill it
with SIGKILL, then time ``podium serve`` from start to its ready line (three times), with the
store's own recovery time from its log. Also prints the daemon's resident memory holding them
(VmRSS and peak VmHWM from /proc) after the fill and after each restart.

Usage: python ops/measure-restart.py 5000 50000 /tmp/restart-db   (docs/reliability.md)
       python ops/measure-restart.py 5000 50000 /tmp/restart-etcd etcd://127.0.0.1:2379/restart
(the second keeps the store in etcd: the prefix is filled once, when it is new)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import trio

from podium.cli.bench.process import ServeProcess
from podium.protocol.client import connect
from podium.protocol.loader import decode_object

READY_SECONDS = 300.0
"""A restart recovers the whole database before its ready line; room for a loaded machine."""


def start(work: Path, store: tuple[str, ...] = ()) -> ServeProcess:
    return ServeProcess.start(
        "--listen", "127.0.0.1:0", *store, cwd=work, ready_timeout=READY_SECONDS
    )


def memory(daemon: ServeProcess) -> str:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{daemon.pid}/status").read_text().splitlines()
    )
    rss, peak = (int(fields[k].split()[0]) // 1024 for k in ("VmRSS", "VmHWM"))
    return f"RSS {rss} MiB (peak {peak} MiB)"


def node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"n{i}",
            "labels": {
                "topology.kubernetes.io/zone": f"z{i % 5}",
                "kubernetes.io/hostname": f"n{i}",
            },
        },
        "status": {
            "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(j: int, nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{j}", "namespace": "default", "labels": {"app": f"a{j % 50}"}},
        "spec": {
            "nodeName": f"n{j % nodes}",
            "containers": [
                {
                    "name": "c",
                    "image": "registry.example.com/app:1.0",
                    "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}},
                }
            ],
        },
    }


async def fill(address: str, nodes: int, pods: int) -> None:
    async with connect(address) as client:
        raw = [node(i) for i in range(nodes)] + [pod(j, nodes) for j in range(pods)]
        for k in range(0, len(raw), 5000):
            await client.put([decode_object(o) for o in raw[k : k + 5000]])


def main() -> None:
    nodes, pods, work = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    store = ("--store", sys.argv[4]) if len(sys.argv) > 4 else ()
    work.mkdir(parents=True, exist_ok=True)
    filled = work / ("filled" if store else "podium.db")
    if not filled.exists():
        daemon = start(work, store)
        began = time.perf_counter()
        trio.run(fill, daemon.address, nodes, pods)
        print(f"filled {nodes} nodes and {pods} pods in {time.perf_counter() - began:.1f} s")
        print(f"holding them: {memory(daemon)}")
        daemon.kill()
        if store:
            filled.touch()
    for _ in range(3):
        daemon = start(work, store)
        held = memory(daemon)
        daemon.kill()
        log = daemon.stderr_text().splitlines()
        recovered = [line.split(": ", 1)[1] for line in log if "recovered" in line]
        print(
            f"restart to ready: {daemon.started_seconds:.2f} s; "
            f"{recovered[0] if recovered else ''}; {held}"
        )
    if not store:
        print(f"database: {os.path.getsize(work / 'podium.db') // 2**20} MiB")


if __name__ == "__main__":
    main()
