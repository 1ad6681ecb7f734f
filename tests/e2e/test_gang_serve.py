"""Issue 24's "Done when", as a user meets it: a real ``podium serve`` (TCP on loopback, its
database a SQLite file in the test's folder), driven by the ``podium`` CLI.

Three GPU nodes with two ``nvidia.com/gpu`` each and one CPU-only node: room for 6 GPU workers.
The user applies a PodGroup (``scheduling.k8s.io/v1alpha2``, gang, minCount 8) and 5 of its 8
workers (1 GPU each): ``podium explain`` says the pods wait for the group's quorum. The 3 other
workers applied: the group is tried, 6 of 8 fit, so none is bound, and every worker's
PodScheduled condition (``podium get pods -o json``) names the group, the count and each member
that did not fit with its FitError. Then the user applies two GPU nodes of one GPU each: all 8
workers are bound, in one transaction (their Bound events carry consecutive revisions).

The time from the nodes' apply to the last Bound is measured on a watch opened before the
apply, from the watch's event for the second node (the commit the apply's reply acknowledges),
and from the moment ``podium apply`` printed its reply; both are printed (``-s``) and recorded
in docs/reliability.md. The issue asks for a second; the test asserts :data:`BOUND_WITHIN`
(5 s), which a CI machine three or four times slower than this one still meets.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import trio
from daemon import PODIUM, Daemon, StartDaemon

from podium.protocol.client import connect

BOUND_WITHIN = 5.0
"""Seconds allowed from the GPU nodes' apply to the last worker's Bound (measured: ~0.05 s)."""
NS, GROUP, WORKERS, MIN_COUNT = "ml", "train", 8, 8


def _node(name: str, gpus: int) -> str:
    resources = f'{{cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "{gpus}"}}'
    if not gpus:
        resources = '{cpu: "16", memory: 64Gi, pods: "110"}'
    return (
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n"
        f"status:\n  capacity: {resources}\n  allocatable: {resources}\n"
    )


def _group() -> str:
    return (
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\n"
        f"metadata: {{name: {GROUP}, namespace: {NS}}}\n"
        f"spec: {{schedulingPolicy: {{gang: {{minCount: {MIN_COUNT}}}}}}}\n"
    )


def _worker(i: int) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: worker-{i}, namespace: {NS}}}\n"
        f"spec:\n  schedulingGroup: {{podGroupName: {GROUP}}}\n"
        "  containers:\n  - name: trainer\n    image: trainer:1\n"
        "    resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}\n"
    )


def _file(path: Path, *documents: str) -> Path:
    path.write_text("---\n".join(documents))
    return path


async def _podium(daemon: Daemon, *args: str) -> str:
    done = await trio.run_process(
        [PODIUM, *args, "--server", daemon.address],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def _workers(daemon: Daemon) -> list[dict[str, Any]]:
    listed = json.loads(await _podium(daemon, "get", "pods", "-n", NS, "-o", "json"))
    return listed["items"]  # type: ignore[no-any-return]


def _scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            return condition  # type: ignore[no-any-return]
    return None


async def _timed_apply(daemon: Daemon, path: Path) -> float:
    """Run ``podium apply -f path``; the monotonic time its reply was printed."""
    process = await trio.lowlevel.open_process(
        [PODIUM, "apply", "-f", str(path), "--server", daemon.address], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        out = await process.stdout.receive_some()
        replied = time.monotonic()
        while chunk := await process.stdout.receive_some():
            out += chunk
    finally:
        await process.wait()
    assert process.returncode == 0, out
    assert out.decode().splitlines() == ["node/gpu-3 created", "node/gpu-4 created"]
    return replied


async def test_a_gang_of_8_gpu_workers_waits_whole_then_binds_whole_once_nodes_are_added(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    daemon = start_daemon()
    assert (tmp_path / "podium.db").is_file()
    nodes = [_node(f"gpu-{i}", 2) for i in range(3)] + [_node("cpu-0", 0)]
    await _podium(daemon, "apply", "-f", str(_file(tmp_path / "nodes.yaml", *nodes)))

    # 5 of the 8 workers: the group has no quorum, the pods wait before the queue.
    first = _file(tmp_path / "train.yaml", _group(), *(_worker(i) for i in range(5)))
    await _podium(daemon, "apply", "-f", str(first))
    with trio.fail_after(10):
        while True:
            explained = json.loads(await _podium(daemon, "explain", f"{NS}/worker-0", "-o", "json"))
            if explained["message"]:
                break
            await trio.sleep(0.05)
    assert explained["message"] == f"waiting for pod group {NS}/{GROUP}: 5 of 8 pods exist"
    assert explained["node"] is None and not explained["bound"]
    text = await _podium(daemon, "explain", f"{NS}/worker-4")
    assert f"waiting for pod group {NS}/{GROUP}: 5 of 8 pods exist" in text

    async with (
        connect(daemon.address) as client,
        client.watch(kinds=["Pod", "Node"]) as events,
    ):
        # The other 3: the quorum is there, the group is tried as one, 6 of 8 fit: none bound.
        rest = _file(tmp_path / "rest.yaml", *(_worker(i) for i in range(5, WORKERS)))
        await _podium(daemon, "apply", "-f", str(rest))
        with trio.fail_after(10):
            while True:
                pods = await _workers(daemon)
                conditions = [_scheduled(p) for p in pods]
                if len(pods) == WORKERS and all(conditions):
                    break
                await trio.sleep(0.05)
        assert not [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")]
        messages = set()
        for pod, condition in zip(pods, conditions, strict=True):
            assert condition is not None
            assert (condition["status"], condition["reason"]) == ("False", "Unschedulable"), pod
            messages.add(condition["message"])
        (message,) = messages  # one verdict for the group, on every member
        head = f"pod group {NS}/{GROUP}: 6 of 8 members fit, minCount 8; "
        assert message.startswith(head), message
        blocked = re.findall(
            rf"{NS}/(worker-\d): 0/4 nodes are available: 4 Insufficient nvidia\.com/gpu\.",
            message,
        )
        assert len(set(blocked)) == 2, message
        table = await _podium(daemon, "get", "pods", "-n", NS, "-o", "wide")
        assert table.count("Pending") == WORKERS and head.strip("; ") in table
        assert re.search(
            rf"^{GROUP}\s+gang\s+8\s+8\s", await _podium(daemon, "get", "pg", "-n", NS), re.M
        )

        # Two GPU nodes of one GPU each: room for the two that did not fit.
        more = _file(tmp_path / "more.yaml", _node("gpu-3", 1), _node("gpu-4", 1))
        seen: dict[str, tuple[float, int, str]] = {}  # worker -> (when, revision, node)
        added_at = 0.0
        async with trio.open_nursery() as nursery:

            async def follow() -> None:
                nonlocal added_at
                async for ev in events:
                    if ev.kind == "Node" and ev.name == "gpu-4":
                        added_at = time.monotonic()
                    assert ev.type != "Bound" or added_at, f"{ev.name} bound before the nodes"
                    if ev.type == "Bound" and ev.namespace == NS:
                        seen[ev.name] = (time.monotonic(), ev.revision, ev.node)
                        if len(seen) == WORKERS:
                            return

            nursery.start_soon(follow)
            with trio.fail_after(30):
                replied = await _timed_apply(daemon, more)
    last = max(when for when, _, _ in seen.values())
    from_commit, from_reply = last - added_at, last - replied
    revisions = sorted(revision for _, revision, _ in seen.values())
    print(
        f"\ngang of {WORKERS} GPU workers: last Bound {from_commit * 1000:.0f} ms after the "
        f"nodes' commit event, {from_reply * 1000:.0f} ms after `podium apply` printed its "
        f"reply; Bound revisions {revisions[0]}..{revisions[-1]}"
    )
    assert max(from_commit, from_reply) < BOUND_WITHIN
    # One transaction: the 8 bindings are consecutive revisions of one commit.
    assert revisions == list(range(revisions[0], revisions[0] + WORKERS))
    pods = await _workers(daemon)
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
    assert placed == {name: node for name, (_, _, node) in seen.items()}
    per_node = {n: list(placed.values()).count(n) for n in set(placed.values())}
    assert per_node == {"gpu-0": 2, "gpu-1": 2, "gpu-2": 2, "gpu-3": 1, "gpu-4": 1}
