"""End to end: the limits of a real ``podium serve`` — frame size, object size (on SQLite and
on etcd), connections, in-flight requests per connection, watchers, and the per-watcher
buffer that cuts off a slow watcher.

Each test starts a daemon (the ``start_daemon`` fixture of tests/conftest.py, without /metrics)
with small limits given as flags, so reaching them takes a handful of requests.
"""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from builders import make_node, make_pod
from daemon import PODIUM, Daemon, StartDaemon
from etcd_servers import EtcdCluster
from raw_frames import frame, recv_frame

from podium.protocol import objects as o
from podium.protocol.client import RemoteError, connect

HELLO = frame(json.dumps({"msg": "hello", "protocol": 1, "encoding": "json"}).encode())


@pytest.fixture
def daemons(start_daemon: StartDaemon) -> Callable[..., Daemon]:
    """Start daemons with extra flags and no /metrics (stopped and checked by start_daemon)."""
    return functools.partial(start_daemon, "--metrics", "none")


def _raw(address: str, *, receive_buffer: int | None = None) -> socket.socket:
    host, port = address.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer is not None:
        # Before connecting: the window the daemon may fill is as small as the kernel allows.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(10)
    sock.connect((host, int(port)))
    return sock


def _json(sock: socket.socket) -> dict[str, Any]:
    payload = recv_frame(sock)
    assert payload is not None, "the daemon closed the connection"
    doc: dict[str, Any] = json.loads(payload)
    return doc


async def _eventually(check: Callable[[], Any], *, seconds: float = 5.0) -> None:
    """Retry ``check`` (an async callable that raises until the daemon has caught up)."""
    with trio.fail_after(seconds):
        while True:
            try:
                await check()
            except (AssertionError, RemoteError):
                await trio.sleep(0.02)
            else:
                return


def _node(name: str) -> o.Node:
    return make_node(name).capacity(cpu="64", memory="256Gi", pods=110).obj()


# --------------------------------------------------------------------------- frames


async def test_the_frame_limit_is_configurable_both_ways(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    d = daemons("--max-frame-bytes", "4096")
    with trio.fail_after(20):
        async with connect(d.address) as cl:
            for i in range(3):
                await cl.put([make_pod(f"p{i}").annotation("a", "x" * 1500).obj()])
            # A reply over the limit: too_large for that request only; the connection stays.
            with pytest.raises(RemoteError) as large_reply:
                await cl.get("Pod", chunk_size=0)
            assert large_reply.value.code == "too_large"
            assert "over the 4096-byte frame limit" in str(large_reply.value)
            assert (await cl.stats()).pods == 3
            # In pages (halved until one fits) the list is read whole.
            assert len((await cl.get("Pod")).items) == 3
        # A request over the limit: too_large with id -1, and that connection is closed.
        big = make_pod("big").annotation("a", "x" * 5000).obj()
        with pytest.raises(RemoteError) as large_request:
            async with connect(d.address) as cl:
                await cl.put([big])
        assert large_request.value.code == "too_large"
        assert "exceeds the limit of 4096 bytes" in str(large_request.value)
        async with connect(d.address) as cl:
            assert (await cl.stats()).pods == 3


# --------------------------------------------------------------------------- objects


def _pod_of(name: str, stored_bytes: int) -> o.Pod:
    """A pod about ``stored_bytes`` long in the store's encoding (long image names: an
    annotation may hold 256 KiB at most)."""
    pod = make_pod(name).obj()
    each = stored_bytes // 100
    containers = [o.Container(name=f"c{i}", image="i" * each) for i in range(100)]
    return msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, containers=containers)
    )


@pytest.mark.parametrize("store", ["sqlite", "etcd"])
async def test_an_object_over_the_limit_is_refused_and_the_daemon_goes_on(
    request: pytest.FixtureRequest, daemons: Callable[..., Daemon], store: str
) -> None:
    # Issue 25 point 1: a 1.6 MB pod went to etcd as one request, etcd refused it ("request
    # is too large"), the daemon exited 1, and the next leader replayed it.
    flags: tuple[str, ...] = ()
    if store == "etcd":
        member: EtcdCluster = request.getfixturevalue("etcd_member")
        flags = ("--store", member.url(f"limits-{uuid.uuid4().hex[:12]}"))
    d = daemons(*flags)
    big = _pod_of("big", 1_600_000)
    with trio.fail_after(30):
        async with connect(d.address) as cl:
            await cl.put([_node("n1")])
            with pytest.raises(RemoteError) as refused:
                await cl.put([make_pod("small").obj(), make_pod("also-small").obj(), big])
            assert refused.value.code == "too_large"
            assert refused.value.reply.message == "Request entity too large: limit is 1572864"
            assert refused.value.path == "$.objects[2]"
            (error,) = refused.value.errors
            assert (error.index, error.kind, error.namespace, error.name) == (
                2,
                "Pod",
                "default",
                "big",
            )
            # Nothing of the request was written; the daemon serves and schedules on.
            await cl.put([make_pod("after").req(cpu="1").obj()])

            async def bound() -> None:
                (pod,) = (await cl.get("Pod", "after")).items
                assert isinstance(pod, o.Pod)
                assert pod.spec.node_name == "n1"

            await _eventually(bound, seconds=20)
            assert [p.metadata.name for p in (await cl.get("Pod")).items] == ["after"]
    assert d.proc.poll() is None, d.log


async def test_a_write_etcd_cannot_take_is_rejected_and_never_replayed(
    etcd_member: EtcdCluster, daemons: Callable[..., Daemon]
) -> None:
    # Under the gateway's limit (1.5 MiB) but, with its event key's fields and a transaction's
    # own (the meta key, the compares), over one etcd request: the store rejects that write;
    # the next daemon on the prefix (a restart after kill -9, as the next leader would) has
    # nothing of it to replay.
    store = ("--store", etcd_member.url(f"replay-{uuid.uuid4().hex[:12]}"))
    d = daemons(*store)
    near = _pod_of("near", 1_568_000)
    with trio.fail_after(30):
        async with connect(d.address) as cl:
            await cl.put([_node("n1")])
            with pytest.raises(RemoteError) as refused:
                await cl.put([near])
            assert refused.value.code == "too_large"
            assert "Pod default/near would be a" in str(refused.value)
            assert "nothing was written" in str(refused.value)
            await cl.put([make_pod("after").obj()])
        d.kill()
        again = daemons(*store)
        async with connect(again.address) as cl:
            names = [p.metadata.name for p in (await cl.get("Pod")).items]
            assert names == ["after"]
            await cl.put([make_pod("later").obj()])


def test_the_object_limit_cannot_pass_what_etcd_holds(tmp_path: Path) -> None:
    run = subprocess.run(
        [PODIUM, "serve", "--store", "etcd://127.0.0.1:1/p", "--max-object-bytes", "2000000"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2, run.stderr
    assert (
        "podium.maxObjectBytes: podium.maxObjectBytes (2000000) is more than the store can "
        "hold: at most 1572864, podium.etcd.maxRequestBytes (etcd's --max-request-bytes)"
    ) in run.stderr


# --------------------------------------------------------------------------- connections


async def test_a_connection_over_the_limit_is_told_and_closed(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    d = daemons("--max-connections", "2")
    with trio.fail_after(20):
        async with connect(d.address) as first, connect(f"unix:{d.unix}") as second:
            for server in (d.address, f"unix:{d.unix}"):
                with pytest.raises(RemoteError) as refused:
                    async with connect(server):
                        pass
                assert (refused.value.code, str(refused.value)) == (
                    "unavailable",
                    "connection limit 2 reached (podium.maxConnections); "
                    "retry later or raise the limit",
                )
            # The two it holds are unharmed.
            assert (await first.stats()).connections == 2
            assert (await second.stats()).connections == 2

        # Once one goes, a new one gets in.
        async def again() -> None:
            async with connect(d.address) as cl:
                assert (await cl.stats()).connections == 1

        await _eventually(again)
    code, err = d.stop()
    assert code == 0, err
    assert "connection limit 2 reached; a new connection was refused" in err


async def test_requests_beyond_the_in_flight_limit_wait_and_are_all_answered(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    d = daemons("--max-in-flight", "1")

    def pipeline() -> set[int]:
        with _raw(d.address) as sock:
            sock.sendall(HELLO)
            assert _json(sock)["msg"] == "hello_reply"
            # Two watches (they hold no in-flight slot) and 30 requests, none read yet.
            frames = [frame(json.dumps({"msg": "watch", "id": i}).encode()) for i in (1, 2)]
            frames += [frame(json.dumps({"msg": "stats", "id": i}).encode()) for i in range(3, 33)]
            sock.sendall(b"".join(frames))
            answered: set[int] = set()
            while len(answered) < 32:
                answered.add(_json(sock)["id"])
            return answered

    with trio.fail_after(20):
        assert await trio.to_thread.run_sync(pipeline) == set(range(1, 33))


# --------------------------------------------------------------------------- watchers


async def test_a_watch_over_the_watcher_limit_is_refused(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    d = daemons("--max-watchers", "1")
    with trio.fail_after(20):
        async with connect(d.address) as a, connect(d.address) as b:
            async with a.watch():
                with pytest.raises(RemoteError) as refused:
                    async with b.watch():
                        pass
                assert (refused.value.code, str(refused.value)) == (
                    "overloaded",
                    "watcher limit 1 reached (podium.maxWatchers); retry later or raise the limit",
                )
                assert (await b.stats()).watchers == 1

            async def watch_again() -> None:
                async with b.watch():
                    pass

            await _eventually(watch_again)


def _big_pod(name: str) -> o.Pod:
    """A pod whose every event is ~64 KiB: the socket buffers fill after a few dozen."""
    return make_pod(name).req(cpu="10m").annotation("bulk", "x" * 65536).obj()


async def test_a_watcher_that_never_reads_is_cut_off_and_scheduling_goes_on(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    # watchBuffer 8; an outbox of 256 KiB holds four events. 120 pods make 240 events of
    # 64 KiB (15 MiB): far more than the outbox and the socket buffers (4 MiB at most) hold.
    d = daemons("--watch-buffer", "8", "--max-outbox-bytes", str(256 * 1024))
    pods = 120
    with trio.fail_after(25), _raw(d.address, receive_buffer=4096) as slow:
        async with connect(d.address) as cl:
            start = (await cl.put([_node(f"n{i}") for i in range(4)])).revision
            slow.sendall(HELLO)
            assert _json(slow)["msg"] == "hello_reply"
            slow.sendall(frame(json.dumps({"msg": "watch", "id": 7, "kinds": ["Pod"]}).encode()))
            assert _json(slow) == {"msg": "watch_reply", "id": 7, "revision": start}
            # From here the slow watcher reads nothing while 120 pods are put and bound.
            for batch in range(6):
                await cl.put([_big_pod(f"p{batch}-{i}") for i in range(pods // 6)])

            async def all_bound_and_slow_one_gone() -> None:
                stats = await cl.stats()
                # Scheduling went on, and the hub let go of the slow watch (its events stop
                # piling up in the daemon).
                assert (stats.bound, stats.watchers) == (pods, 0)

            await _eventually(all_bound_and_slow_one_gone, seconds=15)

        # What the slow watcher finds when it finally reads: events, then where to resume.
        def drain() -> tuple[list[tuple[int, str, str]], dict[str, Any]]:
            got: list[tuple[int, str, str]] = []
            while (msg := _json(slow))["msg"] == "event":
                got.append((msg["revision"], msg["type"], msg["name"]))
            return got, msg

        got, end = await trio.to_thread.run_sync(drain)
        last = got[-1][0]
        assert 0 < len(got) < 2 * pods
        assert (end["id"], end["code"], end["revision"]) == (7, "overloaded", last)
        assert end["message"] == (
            f"watch fell more than 8 events behind (podium.watchBuffer); "
            f"resume from revision {last}"
        )
        async with connect(d.address) as cl:
            # Resuming from there gives the rest: with what it got, every event exactly once.
            async with cl.watch(from_revision=last, kinds=["Pod"]) as rest:
                async for ev in rest:
                    got.append((ev.revision, ev.type, ev.name))
                    if len(got) == 2 * pods:
                        break
            everything: list[tuple[int, str, str]] = []
            async with cl.watch(from_revision=start, kinds=["Pod"]) as events:
                async for ev in events:
                    everything.append((ev.revision, ev.type, ev.name))
                    if len(everything) == 2 * pods:
                        break
        assert got == everything
        assert sum(t == "Bound" for _, t, _ in everything) == pods


async def test_one_large_put_does_not_cut_off_a_watcher_that_keeps_up(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    d = daemons("--watch-buffer", "8")
    with trio.fail_after(20):
        async with connect(d.address) as cl, cl.watch(kinds=["Node"]) as events:
            await cl.put([_node(f"n{i}") for i in range(50)])  # one commit of 50 > 8
            names = [(await events.__anext__()).name for _ in range(50)]
            assert names == [f"n{i}" for i in range(50)]
            assert (await cl.stats()).watchers == 1


# --------------------------------------------------------------------------- the hello


async def test_silent_sockets_cannot_keep_a_client_out(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    # Issue 16, point 8: sockets that send one byte held every connection slot for the
    # handshake timeout. Here 80 of them against 70 slots and a timeout of a minute: only
    # maxHandshakes (8) of them are kept, the oldest closed first, and a client gets in.
    d = daemons("--max-connections", "70", "--max-handshakes", "8", "--handshake-timeout", "60")
    silent: list[socket.socket] = []
    try:
        for _ in range(80):
            sock = _raw(d.address)
            sock.sendall(b"\x00")
            silent.append(sock)
        with trio.fail_after(2):
            async with connect(d.address) as cl:
                stats = await cl.stats()
        # The client, and at most 8 silent sockets still waiting for their hello.
        assert stats.connections <= 1 + 8
        # The oldest were closed first (without a word: they never said which encoding).
        silent[0].settimeout(5)
        assert silent[0].recv(1) == b""
    finally:
        for sock in silent:
            sock.close()


async def test_a_connection_without_a_hello_is_closed_after_the_handshake_timeout(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    d = daemons("--handshake-timeout", "0.5")
    with _raw(d.address) as sock:  # its reads time out after 10 s
        started = time.monotonic()
        sock.sendall(b"\x00")
        error = _json(sock)
        assert (error["msg"], error["id"], error["code"], error["message"]) == (
            "error",
            -1,
            "invalid",
            "no hello within 0.5 seconds",
        )
        assert 0.4 < time.monotonic() - started < 3


# --------------------------------------------------------------------------- bytes waiting

MiB = 1024 * 1024


def _rss(pid: int) -> int:
    """The daemon's resident memory now (VmRSS of /proc/PID/status), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _pipeline(sock: socket.socket, data: bytes, seconds: float) -> int:
    """Send as much of ``data`` as the daemon takes in ``seconds`` (never reading); the bytes
    sent."""
    sock.settimeout(0.2)
    sent = 0
    deadline = time.monotonic() + seconds
    while sent < len(data) and time.monotonic() < deadline:
        try:
            sent += sock.send(data[sent : sent + 65536])
        except TimeoutError:
            continue
    return sent


async def test_a_client_that_pipelines_and_never_reads_holds_only_its_outbox(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    # Issue 16, point 1: 60 000 gets of a ~200 KB pod (12 GB of replies) on a connection that
    # never reads took the daemon from 62 MiB to 2.9 GiB, and kept 2.8 GiB after it left.
    outbox, total = 4 * MiB, 16 * MiB
    d = daemons("--max-outbox-bytes", str(outbox), "--max-buffered-bytes", str(total))
    with trio.fail_after(60):
        async with connect(d.address) as cl:
            await cl.put([make_pod("big").annotation("bulk", "x" * 200_000).obj()])
            for _ in range(20):
                assert len((await cl.get("Pod", "big", "default")).items) == 1
            baseline = _rss(d.pid)
            greedy = _raw(d.address, receive_buffer=4096)
            with greedy:
                greedy.sendall(HELLO)
                assert _json(greedy)["msg"] == "hello_reply"
                gets = b"".join(
                    frame(
                        json.dumps({"msg": "get", "id": i, "kind": "Pod", "name": "big"}).encode()
                    )
                    for i in range(1, 60_001)
                )
                peak = baseline
                async with trio.open_nursery() as nursery:
                    sent: list[int] = []

                    async def pipeline() -> None:
                        sent.append(await trio.to_thread.run_sync(_pipeline, greedy, gets, 5.0))

                    nursery.start_soon(pipeline)
                    # Meanwhile another client is answered promptly, again and again.
                    while not sent:
                        with trio.fail_after(2):
                            assert (await cl.get("Pod", "big", "default")).items
                            assert (await cl.stats()).connections == 2
                        peak = max(peak, _rss(d.pid))
                        await trio.sleep(0.05)
                # The daemon stopped reading: the client could not hand over its 60 000 gets.
                assert sent[0] < len(gets)
                peak = max(peak, _rss(d.pid))
                assert peak - baseline < outbox + 24 * MiB, (baseline, peak)
            # The greedy client leaves: its outbox and its requests are let go.

            async def one_connection_left() -> None:
                assert (await cl.stats()).connections == 1

            await _eventually(one_connection_left)
            after = _rss(d.pid)
            assert after - baseline < 16 * MiB, (baseline, peak, after)
            assert len((await cl.get("Pod", "big", "default")).items) == 1
