"""Extenders through a real ``podium serve``: a policy whose extender filters, prioritizes and
binds (a real HTTP server on loopback, tests/support/extender_server.py), explain showing its
verdicts, and the binder path under ``kill -9``: no pod bound twice, none lost.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import trio
from builders import make_node, make_pod
from daemon import PODIUM, StartDaemon
from extender_server import (
    Answer,
    BindLog,
    ExtenderServer,
    filter_nodes,
    node_names,
    prioritize,
)

from podium.cli.bench.loadgen import settle
from podium.protocol import objects as o
from podium.protocol.client import ClientConnectionError, RemoteError, connect

encode = msgspec.json.Encoder(enc_hook=o.enc_hook).encode


def _policy(tmp_path: Path, url: str, **extender: Any) -> str:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"kind": "Policy", "extenders": [{"urlPrefix": url, **extender}]}))
    return str(path)


async def _bound(address: str) -> dict[str, str]:
    """pod uid -> node, for the bound pods."""
    async with connect(address) as client:
        got = await client.get("Pod", namespace="default")
    return {
        p.metadata.uid: p.spec.node_name
        for p in got.items
        if isinstance(p, o.Pod) and p.spec.node_name
    }


def test_the_daemon_filters_prioritizes_and_binds_through_an_extender(
    start_daemon: StartDaemon, tmp_path: Path
) -> None:
    log = BindLog()
    handlers = {
        "filter": filter_nodes(lambda n: "n1 is reserved" if n == "n1" else None),
        "prioritize": prioritize(lambda n: 10 if n == "n3" else 0),
        "bind": log,
    }
    with ExtenderServer(handlers) as server:
        policy = _policy(
            tmp_path,
            server.url,
            filterVerb="filter",
            prioritizeVerb="prioritize",
            bindVerb="bind",
            weight=100,
            nodeCacheCapable=True,
        )
        daemon = start_daemon("--metrics", "none", "--policy", policy)

        async def scenario() -> tuple[dict[str, str], Any]:
            with trio.fail_after(60):
                async with connect(daemon.address) as client:
                    await client.put(
                        [
                            make_node(n).capacity(cpu="4", memory="8Gi", pods=20).obj()
                            for n in ("n1", "n2", "n3")
                        ]
                        + [make_pod(f"p{i}").req(cpu="100m").obj() for i in range(5)]
                        + [make_pod("huge").req(cpu="64").obj()]
                    )
                    await settle(client)
                    explained = await client.explain("default", "huge")
                return await _bound(daemon.address), explained

        bound, explained = trio.run(scenario)
    assert sorted(bound.values()) == ["n3"] * 5
    assert log.bound == bound  # the store recorded exactly what the extender bound
    assert len(log.calls) == 5
    verbs = server.verbs()
    assert {"filter", "prioritize", "bind"} <= set(verbs)
    placement = explained.placement
    assert placement.node is None
    assert placement.message == (
        "0/3 nodes are available: 3 Insufficient cpu."
        " preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


def test_explain_shows_each_extenders_verdict_and_score(
    start_daemon: StartDaemon, tmp_path: Path
) -> None:
    handlers = {
        "filter": filter_nodes(lambda n: "n1 is reserved" if n == "n1" else None),
        "prioritize": prioritize(lambda n: 7 if n == "n3" else 2),
    }
    with ExtenderServer(handlers) as server:
        policy = _policy(
            tmp_path, server.url, filterVerb="filter", prioritizeVerb="prioritize", weight=3
        )
        daemon = start_daemon("--metrics", "none", "--policy", policy)

        async def scenario() -> Any:
            with trio.fail_after(60):
                async with connect(daemon.address) as client:
                    await client.put(
                        [
                            make_node(n).capacity(cpu="4", memory="8Gi", pods=20).obj()
                            for n in ("n1", "n2", "n3")
                        ]
                    )
                    return await client.simulate(
                        make_pod("what-if").req(cpu="100m").obj(), explain=True
                    )

        reply = trio.run(scenario)
    placement = reply.placement
    assert placement.node == "n3"
    nodes = placement.nodes
    assert nodes["n1"].fits is False
    assert nodes["n1"].reasons == [f"extender {server.url}: n1 is reserved"]
    assert nodes["n3"].scores[f"extender {server.url}"] == 7
    assert nodes["n2"].scores[f"extender {server.url}"] == 2
    n2_total, n3_total = nodes["n2"].total, nodes["n3"].total
    assert n2_total is not None and n3_total is not None
    # n2 and n3 are alike for the default priorities: only the extender's weighted part differs.
    assert n3_total - n2_total == (7 - 2) * 3


def test_the_binder_path_survives_kill_9(start_daemon: StartDaemon, tmp_path: Path) -> None:
    """The binding extender records every bind; the daemon is killed with SIGKILL while pods
    pour in, twice, and restarted. A pod whose extender bind landed but whose store commit did
    not is scheduled again: the extender pins it to the node it bound it to (its filter), and
    answers the repeated bind as a Kubernetes binding does (same node: fine). At the end no pod
    was bound by the extender to two nodes, and every acknowledged pod is bound in the store,
    on the node the extender bound it to."""
    log = BindLog()

    def pinned(args: Any) -> Answer:
        # A pod the extender already bound may only go back to that node.
        uid = args["Pod"]["metadata"]["uid"]
        with log.lock:
            where = log.bound.get(uid)
        names = node_names(args)
        passing = [n for n in names if where is None or n == where]
        failed = {n: f"bound to {where} already" for n in names if n not in passing}
        return Answer(body=json.dumps({"NodeNames": passing, "FailedNodes": failed}).encode())

    rng = random.Random(7)
    acked: set[str] = set()
    with ExtenderServer({"filter": pinned, "bind": log}) as server:
        policy = _policy(
            tmp_path, server.url, filterVerb="filter", bindVerb="bind", nodeCacheCapable=True
        )
        daemon = start_daemon("--metrics", "none", "--policy", policy)
        trio.run(_put_nodes, daemon.address)
        for phase in range(2):
            trio.run(_load_until_killed, daemon, phase, rng, acked)
            daemon = start_daemon("--metrics", "none", "--policy", policy)
        trio.run(_settle, daemon.address)
        bound = trio.run(_bound, daemon.address)
    nodes_per_pod: dict[str, set[str]] = {}
    for uid, node in log.calls:
        nodes_per_pod.setdefault(uid, set()).add(node)
    assert all(len(nodes) == 1 for nodes in nodes_per_pod.values()), nodes_per_pod
    assert acked <= set(bound), f"{len(acked - set(bound))} acknowledged pods were not bound"
    assert {uid: log.bound[uid] for uid in bound} == bound
    assert len(acked) >= 80  # at least four batches of ten in each of the two phases


async def _put_nodes(address: str) -> None:
    async with connect(address) as client:
        await client.put(
            [make_node(f"n{i}").capacity(cpu="64", memory="64Gi", pods=500).obj() for i in range(4)]
        )


async def _settle(address: str) -> None:
    with trio.fail_after(60):
        async with connect(address) as client:
            await settle(client)


async def _load_until_killed(daemon: Any, phase: int, rng: random.Random, acked: set[str]) -> None:
    """Put pods one batch after another; kill the daemon after a random number of batches."""
    batches = rng.randrange(3, 8)
    with trio.fail_after(60):
        try:
            async with connect(daemon.address) as client:
                for batch in range(10_000):
                    pods = [
                        make_pod(f"p{phase}-{batch}-{i}").req(cpu="10m").obj() for i in range(10)
                    ]
                    reply = await client.put(pods)
                    acked.update(ref.uid for ref in reply.objects)
                    if batch == batches:
                        daemon.kill()
        except (ClientConnectionError, RemoteError):
            pass


def _simulate(*args: str) -> Any:
    proc = subprocess.run(
        [PODIUM, "simulate", *args, "-o", "json", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_simulate_calls_the_extenders_unless_told_not_to(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.json"
    objects = [make_node(n).capacity(cpu="4", memory="8Gi", pods=20).obj() for n in ("n1", "n2")]
    objects += [make_pod(f"p{i}").req(cpu="100m").obj() for i in range(3)]
    cluster.write_text(
        json.dumps({"kind": "List", "items": [json.loads(encode(obj)) for obj in objects]})
    )
    handlers = {"filter": filter_nodes(lambda n: "n1 is reserved" if n == "n1" else None)}
    with ExtenderServer(handlers) as server:
        policy = _policy(tmp_path, server.url, filterVerb="filter", nodeCacheCapable=True)
        called = _simulate("-f", str(cluster), "--policy", policy, "--explain")
        requests = len(server.requests)
        skipped = _simulate("-f", str(cluster), "--policy", policy, "--no-extenders")
        assert len(server.requests) == requests
    assert requests == 3
    assert [p["node"] for p in called["pods"]] == ["n2", "n2", "n2"]
    assert called["pods"][0]["nodes"]["n1"]["reasons"] == [f"extender {server.url}: n1 is reserved"]
    assert "n1" in {p["node"] for p in skipped["pods"]}


def test_the_example_extender_of_the_readme(tmp_path: Path) -> None:
    """examples/extender.py, run as the README says, steers podium simulate."""
    example = Path(__file__).resolve().parents[2] / "examples" / "extender.py"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(example),
            "--port",
            "0",
            "--reject",
            "n1",
            "--prefer",
            "n3",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        cluster = tmp_path / "cluster.json"
        objects = [
            make_node(n).capacity(cpu="4", memory="8Gi", pods=20).obj() for n in ("n1", "n2", "n3")
        ]
        objects.append(make_pod("web").req(cpu="100m").obj())
        cluster.write_text(
            json.dumps({"kind": "List", "items": [json.loads(encode(obj)) for obj in objects]})
        )
        policy = _policy(
            tmp_path,
            url,
            filterVerb="filter",
            prioritizeVerb="prioritize",
            bindVerb="bind",
            weight=5,
            nodeCacheCapable=True,
        )
        doc = _simulate("-f", str(cluster), "--policy", policy, "--explain")
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    pod = doc["pods"][0]
    assert pod["node"] == "n3"
    assert pod["nodes"]["n1"]["reasons"] == [
        f"extender {url}: node n1 is reserved by the example extender"
    ]
    assert pod["nodes"]["n3"]["scores"][f"extender {url}"] == 10


def test_each_extender_call_is_a_span_of_the_attempt(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    """Extenders from the configuration file; the console exporter prints every span."""
    handlers = {
        "filter": filter_nodes(lambda n: None),
        "prioritize": prioritize(lambda n: 1),
        "bind": BindLog(),
    }
    with ExtenderServer(handlers) as server:
        config = tmp_path / "config.yaml"
        config.write_text(
            "podium:\n"
            "  listen: 127.0.0.1:0\n"
            "  metrics: null\n"
            "  tracing: {console: true, sampleRatio: 1}\n"
            "extenders:\n"
            f"  - urlPrefix: {server.url}\n"
            "    filterVerb: filter\n"
            "    prioritizeVerb: prioritize\n"
            "    bindVerb: bind\n"
            "    weight: 1\n"
        )
        daemon = start_daemon("--config", str(config), bare=True)

        async def one_pod() -> None:
            with trio.fail_after(30):
                async with connect(daemon.address) as client:
                    await client.put(
                        [
                            make_node(n).capacity(cpu="4", memory="8Gi", pods=10).obj()
                            for n in ("n1", "n2")
                        ]
                    )
                    await client.put([make_pod("traced").req(cpu="1").obj()])
                    await settle(client)

        trio.run(one_pod)
        code, text = daemon.stop()
    assert code == 0, text
    attempt = re.search(
        r"span scheduling_attempt trace=(\S+) id=(\S+) .*podium.pod=default/traced.*", text
    )
    assert attempt, text
    trace_id, span_id = attempt.group(1), attempt.group(2)
    for verb in ("filter", "prioritize", "bind"):
        child = re.search(
            rf"span extender {verb} trace={re.escape(trace_id)} id=\S+ parent={re.escape(span_id)} .*",
            text,
        )
        assert child, (verb, text)
        assert f"podium.extender={server.url}" in child.group(0)
        assert "podium.result=ok" in child.group(0)
