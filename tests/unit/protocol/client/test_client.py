"""protocol/client/__init__.py against the fake daemon of tests/support/fakeserver.py: every
request in both encodings, out-of-order replies, watches and their cancellation, errors and lost
connections, and the blocking wrapper from a plain thread.

Sockets are real (loopback, port 0), so these tests run on trio's real clock (the autojump clock
would jump while a task waits on the network) and each one is guarded by ``fail_after``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
import trio
from builders import make_node, make_pod
from fakeserver import DROP, Outgoing, fake_server, fake_server_thread

from podium.protocol.client import (
    DEFAULT_CHUNK_SIZE,
    BlockingClient,
    Client,
    ConnectionLost,
    LeaderUnavailable,
    RemoteError,
    ServerUnreachable,
    connect,
    parse_server,
)
from podium.protocol.wire import (
    Cancel,
    CancelReply,
    ClientMessage,
    Delete,
    DeleteReply,
    Encoding,
    ErrorReply,
    Event,
    Explain,
    ExplainReply,
    Get,
    GetReply,
    Hint,
    NodeVerdict,
    ObjectError,
    ObjectRef,
    ObjectStatus,
    PendingCounts,
    Placement,
    PriorityWeight,
    Put,
    PutReply,
    ReloadPolicy,
    ReloadPolicyReply,
    Simulate,
    SimulateReply,
    Stats,
    StatsReply,
    Watch,
    WatchReply,
)

LIMIT = 5  # seconds: a generous guard; every test finishes in milliseconds


@pytest.fixture(params=["msgpack", "json"])
def proto(request: pytest.FixtureRequest) -> Encoding:
    encoding: Encoding = request.param
    return encoding


def _status(kind: str, ns: str, name: str, action: str = "created") -> ObjectStatus:
    return ObjectStatus(
        kind=kind,
        namespace=ns,
        name=name,
        uid=f"uid-{name}",
        resource_version="8",
        action=action,  # type: ignore[arg-type]  # tests pass the Literal's values as str
    )


def stats_reply(request_id: int) -> StatsReply:
    return StatsReply(
        id=request_id,
        revision=9,
        ready=True,
        nodes=3,
        pods=10,
        bound=7,
        assumed=1,
        pending=PendingCounts(active=1, backoff=1, unschedulable=1),
        scheduled=7,
        unschedulable=2,
        errors=0,
        connections=1,
        watchers=0,
        uptime_seconds=61.5,
    )


PLACEMENT = Placement(
    namespace="default",
    name="big",
    node=None,
    message="0/2 nodes are available: 2 Insufficient cpu.",
    attempts=3,
    nodes={
        "n1": NodeVerdict(fits=False, reasons=["Insufficient cpu"]),
        "n2": NodeVerdict(fits=False, reasons=["Insufficient cpu"]),
    },
)


def answer(request: ClientMessage) -> list[Outgoing]:
    """A daemon that answers every request plausibly."""
    match request:
        case Put():
            statuses = [
                _status(type(o).__name__, o.metadata.namespace, o.metadata.name)
                for o in request.objects
            ]
            return [PutReply(id=request.id, revision=8, objects=statuses)]
        case Delete():
            statuses = [_status(r.kind, r.namespace, r.name, "deleted") for r in request.refs]
            return [DeleteReply(id=request.id, revision=9, objects=statuses)]
        case Get():
            return [GetReply(id=request.id, revision=9, items=[make_node("n1").obj()])]
        case Explain():
            hint = Hint(resource="cpu", missing="200m", nodes=2)
            return [ExplainReply(id=request.id, revision=9, placement=PLACEMENT, hints=[hint])]
        case Simulate():
            placement = Placement(
                namespace="default", name=request.pod.metadata.name, node="n2", message=None
            )
            return [SimulateReply(id=request.id, revision=9, placement=placement)]
        case ReloadPolicy():
            return [
                ReloadPolicyReply(
                    id=request.id,
                    predicates=["PodFitsResources"],
                    priorities=[PriorityWeight(name="LeastRequestedPriority", weight=1)],
                )
            ]
        case Stats():
            return [stats_reply(request.id)]
        case Watch():
            return [
                WatchReply(id=request.id, revision=9),
                _event(request.id, 10, "Bound", node="n1"),
                _event(request.id, 11, "Deleted"),
            ]
        case Cancel():
            return [CancelReply(id=request.id)]
    raise AssertionError(f"unexpected {request!r}")


def _event(watch_id: int, revision: int, type_: str, node: str = "") -> Event:
    return Event(
        id=watch_id,
        revision=revision,
        type=type_,  # type: ignore[arg-type]  # a Literal's value
        kind="Pod",
        namespace="default",
        name=f"p{revision}",
        node=node,
    )


async def drain(client: Client, seen: list[int], **watch: Any) -> None:
    """Read a watch to its end, noting each event's revision."""
    async with client.watch(**watch) as events:
        async for event in events:
            seen.append(event.revision)


def free_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


# --------------------------------------------------------------------------- every method


async def test_every_method_round_trips(proto: Encoding) -> None:
    node, pod = make_node("n1").obj(), make_pod("web-1").req(cpu="100m").obj()
    with trio.fail_after(LIMIT):
        async with fake_server(answer) as server, connect(server.address, encoding=proto) as c:
            assert (c.revision, c.server_version, c.encoding) == (7, "fake", proto)
            put = await c.put([node, pod])
            assert [(s.kind, s.namespace, s.name, s.action) for s in put.objects] == [
                ("Node", "", "n1", "created"),
                ("Pod", "default", "web-1", "created"),
            ]
            deleted = await c.delete([ObjectRef(kind="Pod", name="web-1", namespace="default")])
            assert deleted.objects[0].action == "deleted"
            got = await c.get("Node", label_selector="zone=a")
            assert [o.metadata.name for o in got.items] == ["n1"]
            explained = await c.explain("default", "big")
            assert explained.placement == PLACEMENT
            assert explained.hints == [Hint(resource="cpu", missing="200m", nodes=2)]
            simulated = await c.simulate(pod, explain=True)
            assert simulated.placement.node == "n2"
            policy = await c.reload_policy()
            assert policy.predicates == ["PodFitsResources"]
            stats = await c.stats()
            assert stats == stats_reply(stats.id)
        assert server.hellos[0].encoding == proto
        assert [type(r).__name__ for r in server.requests] == [
            "Put",
            "Delete",
            "Get",
            "Explain",
            "Simulate",
            "ReloadPolicy",
            "Stats",
        ]
        # The requests arrive as sent: quantities and all, through the real codec.
        sent_put = server.requests[0]
        assert isinstance(sent_put, Put)
        assert sent_put.objects == [node, pod]
        assert server.requests[2] == Get(
            id=3, kind="Node", label_selector="zone=a", limit=DEFAULT_CHUNK_SIZE
        )
        assert server.requests[4] == Simulate(id=5, pod=pod, explain=True)
        assert [r.id for r in server.requests] == [1, 2, 3, 4, 5, 6, 7]


async def test_hello_carries_encoding_and_token(proto: Encoding) -> None:
    with trio.fail_after(LIMIT):
        async with (
            fake_server(answer) as server,
            connect(server.address, encoding=proto, token="s3cret"),
        ):
            pass
    assert server.hellos[0].protocol == 1
    assert server.hellos[0].token == "s3cret"


async def test_refused_hello_raises_remote_error() -> None:
    refusal = ErrorReply(id=-1, code="unauthorized", message="a token is required")
    with trio.fail_after(LIMIT):
        async with fake_server(answer, hello_reply=refusal) as server:
            with pytest.raises(RemoteError) as info:
                async with connect(server.address):
                    pytest.fail("the handshake should have failed")
    assert info.value.code == "unauthorized"
    assert str(info.value) == "a token is required"


# --------------------------------------------------------------------------- multiplexing


async def test_concurrent_requests_get_their_own_replies_out_of_order(proto: Encoding) -> None:
    gates = {"slow": trio.Event(), "fast": trio.Event()}

    async def handler(request: ClientMessage) -> Sequence[Outgoing]:
        assert isinstance(request, Get)
        if request.name == "slow":
            await gates["slow"].wait()
        node = make_node(request.name).obj()
        return [GetReply(id=request.id, revision=request.id, items=[node])]

    finished: list[str] = []

    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address, encoding=proto) as c:

            async def get(name: str) -> None:
                reply = await c.get("Node", name)
                assert reply.items[0].metadata.name == name
                finished.append(name)
                if name == "fast":
                    gates["slow"].set()  # the slow reply is sent only after the fast one

            async with trio.open_nursery() as nursery:
                nursery.start_soon(get, "slow")
                await server.wait_for_requests(1)
                nursery.start_soon(get, "fast")
    assert finished == ["fast", "slow"]


async def test_many_concurrent_requests_share_one_connection(proto: Encoding) -> None:
    results: dict[int, int] = {}
    with trio.fail_after(LIMIT):
        async with fake_server(answer) as server, connect(server.address, encoding=proto) as c:

            async def stats(i: int) -> None:
                results[i] = (await c.stats()).nodes

            async with trio.open_nursery() as nursery:
                for i in range(20):
                    nursery.start_soon(stats, i)
    assert results == dict.fromkeys(range(20), 3)
    assert len(server.connections) == 1
    assert sorted(r.id for r in server.requests) == list(range(1, 21))


# --------------------------------------------------------------------------- watch


async def test_watch_streams_events_then_cancels_on_exit(proto: Encoding) -> None:
    with trio.fail_after(LIMIT):
        async with fake_server(answer) as server, connect(server.address, encoding=proto) as c:
            seen: list[tuple[int, str, str]] = []
            async with c.watch(from_revision=9, kinds=["Pod"]) as events:
                assert events.revision == 9
                async for event in events:
                    seen.append((event.revision, event.type, event.node))
                    if len(seen) == 2:
                        break
                assert events.last_revision == 11
            # The client still works after the watch ended.
            assert (await c.stats()).nodes == 3
    assert seen == [(10, "Bound", "n1"), (11, "Deleted", "")]
    assert server.requests[0] == Watch(id=1, from_revision=9, kinds=["Pod"])
    assert server.requests[1] == Cancel(id=2, target=1)
    assert isinstance(server.requests[2], Stats)


async def test_watch_receives_events_pushed_later(proto: Encoding) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Watch):
            return [WatchReply(id=request.id, revision=3)]
        return answer(request)

    with trio.fail_after(LIMIT):
        async with (
            fake_server(handler) as server,
            connect(server.address, encoding=proto) as c,
            c.watch() as events,
        ):
            await server.push(_event(events.id, 4, "Unschedulable"))
            await server.push(_event(99, 5, "Added"))  # another watch's id: not ours
            await server.push(_event(events.id, 6, "Bound", node="n2"))
            got = [await events.__anext__(), await events.__anext__()]
    assert [(e.revision, e.type) for e in got] == [(4, "Unschedulable"), (6, "Bound")]


async def test_watch_refused_as_gone_raises_with_oldest_revision() -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        assert isinstance(request, Watch)
        message = "revision 3 is compacted; the oldest kept is 40"
        return [ErrorReply(id=request.id, code="gone", message=message, revision=40)]

    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address) as c:
            with pytest.raises(RemoteError) as info:
                async with c.watch(from_revision=3):
                    pytest.fail("the watch should have been refused")
    assert (info.value.code, info.value.revision) == ("gone", 40)
    assert [type(r).__name__ for r in server.requests] == ["Watch"]  # nothing to cancel


async def test_watch_ended_by_the_daemon_raises_after_its_events() -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Watch):
            cut = ErrorReply(id=request.id, code="overloaded", message="too slow", revision=10)
            return [WatchReply(id=request.id, revision=9), _event(request.id, 10, "Added"), cut]
        return answer(request)

    seen: list[int] = []
    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address) as c:
            with pytest.raises(RemoteError) as info:
                await drain(c, seen)
    assert seen == [10]
    assert (info.value.code, info.value.revision) == ("overloaded", 10)
    assert [type(r).__name__ for r in server.requests] == ["Watch"]  # the daemon ended it


async def test_a_full_watch_buffer_holds_the_reader_until_the_consumer_catches_up() -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Watch):
            return [WatchReply(id=request.id, revision=9)]
        return answer(request)

    seen: list[int] = []
    with trio.fail_after(LIMIT):
        async with (
            fake_server(handler) as server,
            connect(server.address, watch_buffer=2) as c,
            c.watch() as events,
        ):
            for revision in (10, 11, 12, 13):
                await server.push(_event(events.id, revision, "Added"))
            async for event in events:
                seen.append(event.revision)
                if event.revision == 13:
                    break
            # The reader was held, not broken: the connection still answers.
            assert isinstance(await c.stats(), StatsReply)
    # Nothing was dropped although four events met a buffer of two.
    assert seen == [10, 11, 12, 13]


# --------------------------------------------------------------------------- errors


async def test_error_reply_raises_remote_error_with_its_fields(proto: Encoding) -> None:
    bad = ObjectError(
        index=1,
        kind="Pod",
        namespace="default",
        name="web-1",
        path="$.spec.containers[0].resources.requests['cpu']",
        message="quantity must not be negative",
    )

    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [
            ErrorReply(
                id=request.id,
                code="invalid",
                message="1 of 2 objects rejected; nothing was written",
                errors=[bad],
            )
        ]

    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server:
            # Raised from inside the connect block: the caller sees RemoteError itself, not an
            # exception group from the client's nursery.
            with pytest.raises(RemoteError) as info:
                async with connect(server.address, encoding=proto) as c:
                    await c.put([make_node("n1").obj(), make_pod("web-1").obj()])
    err = info.value
    assert (err.code, err.path, err.revision) == ("invalid", None, None)
    assert err.errors == [bad]
    assert err.reply.message == "1 of 2 objects rejected; nothing was written"
    assert str(err) == (
        "1 of 2 objects rejected; nothing was written\n"
        "  object 1 (Pod default/web-1) at $.spec.containers[0].resources.requests['cpu']: "
        "quantity must not be negative"
    )


async def test_unreadable_reply_fails_only_its_request() -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Stats) and request.id == 1:
            return [b'{"msg": "stats_reply", "id": 1, "revision": "nine"}']
        return answer(request)

    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address, encoding="json") as c:
            with pytest.raises(RemoteError) as info:
                await c.stats()
            assert info.value.code == "internal"
            assert "cannot read the daemon's reply" in str(info.value)
            assert (await c.stats()).nodes == 3  # the connection survived


async def test_connect_refused_raises_server_unreachable() -> None:
    address = f"127.0.0.1:{free_port()}"
    with trio.fail_after(LIMIT), pytest.raises(ServerUnreachable) as info:
        async with connect(address):
            pytest.fail("nothing listens there")
    assert str(info.value) == f"cannot reach podium at {address}: connection refused"
    assert info.value.reason == "connection refused"
    assert isinstance(info.value, ConnectionError)
    assert info.value.code == "unavailable"


async def test_missing_unix_socket_raises_server_unreachable(tmp_path: object) -> None:
    with trio.fail_after(LIMIT), pytest.raises(ServerUnreachable) as info:
        async with connect(f"unix:{tmp_path}/podium.sock"):
            pytest.fail("there is no socket")
    assert info.value.reason == "no such file or directory"


# --------------------------------------------------------------------------- lost connections


async def test_dropped_connection_fails_every_waiting_request() -> None:
    arrived = trio.Event()

    async def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Get):
            arrived.set()
            await trio.sleep_forever()
        return answer(request)

    failures: list[BaseException] = []
    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address) as c:

            async def waiting_get(name: str) -> None:
                try:
                    await c.get("Pod", name)
                except ConnectionLost as exc:
                    failures.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(waiting_get, "a")
                nursery.start_soon(waiting_get, "b")
                await server.wait_for_requests(2)
                await server.drop()
            # Later calls fail at once, with the same clear error.
            with pytest.raises(ConnectionLost, match="was lost: closed by the daemon"):
                await c.stats()
    assert len(failures) == 2
    assert all(str(f).startswith(f"connection to podium at {server.address}") for f in failures)


async def test_drop_while_answering_fails_the_request() -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [DROP]

    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address) as c:
            with pytest.raises(ConnectionLost):
                await c.stats()


async def test_error_with_id_minus_one_fails_waiting_requests_with_it() -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        fatal = ErrorReply(id=-1, code="too_large", message="frame of 20 MiB exceeds the limit")
        return [fatal, DROP]

    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address) as c:
            with pytest.raises(RemoteError) as info:
                await c.stats()
            with pytest.raises(RemoteError):
                await c.stats()  # the connection is gone for good
    assert info.value.code == "too_large"


async def test_watch_fails_when_the_connection_is_lost() -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        assert isinstance(request, Watch)
        return [WatchReply(id=request.id, revision=1), _event(request.id, 2, "Added"), DROP]

    seen: list[int] = []
    with trio.fail_after(LIMIT):
        async with fake_server(handler) as server, connect(server.address) as c:
            with pytest.raises(ConnectionLost):
                await drain(c, seen)
    assert seen == [2]


# --------------------------------------------------------------------------- addresses


@dataclass(frozen=True)
class AddressCase:
    name: str
    server: str
    want: tuple[str, int] | str | None  # None: rejected


ADDRESS_CASES = [
    AddressCase("ipv4", "127.0.0.1:7070", ("127.0.0.1", 7070)),
    AddressCase("hostname", "podium.internal:80", ("podium.internal", 80)),
    AddressCase("ipv6 in brackets", "[::1]:7070", ("::1", 7070)),
    AddressCase("unix socket", "unix:/run/podium.sock", "/run/podium.sock"),
    AddressCase("no port", "localhost", None),
    AddressCase("bare ipv6", "::1:7070", None),
    AddressCase("port zero", "localhost:0", None),
    AddressCase("port not a number", "localhost:http", None),
    AddressCase("unix without a path", "unix:", None),
    AddressCase("no host", ":7070", None),
]


@pytest.mark.parametrize("case", ADDRESS_CASES, ids=attrgetter("name"))
def test_parse_server(case: AddressCase) -> None:
    if case.want is None:
        with pytest.raises(ValueError, match=r"server address"):
            parse_server(case.server)
    else:
        assert parse_server(case.server) == case.want


# --------------------------------------------------------------------------- blocking client


def test_blocking_client_from_a_plain_thread() -> None:
    results: dict[str, object] = {}

    def script(address: str) -> None:
        with BlockingClient(address, encoding="json") as podium:
            results["revision"] = podium.revision
            results["stats"] = podium.stats().nodes
            results["put"] = [s.action for s in podium.put([make_node("n1").obj()]).objects]
            results["get"] = [o.metadata.name for o in podium.get("Node").items]
            with podium.watch(from_revision=9) as events:
                results["events"] = [next(events).revision, next(events).revision]
            try:
                podium.explain("default", "missing")
            except RemoteError as exc:
                results["error"] = exc.code

    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Explain):
            return [ErrorReply(id=request.id, code="not_found", message="pod default/missing")]
        return answer(request)

    with fake_server_thread(handler) as server:
        thread = threading.Thread(target=script, args=(server.address,))
        thread.start()
        thread.join(LIMIT)
        assert not thread.is_alive()
    assert results == {
        "revision": 7,
        "stats": 3,
        "put": ["created"],
        "get": ["n1"],
        "events": [10, 11],
        "error": "not_found",
    }
    assert any(isinstance(r, Cancel) for r in server.requests)


def test_blocking_client_raises_when_unreachable() -> None:
    with pytest.raises(ServerUnreachable, match="connection refused"):
        BlockingClient(f"127.0.0.1:{free_port()}")


def test_blocking_client_calls_after_close_fail() -> None:
    with fake_server_thread(answer) as server:
        podium = BlockingClient(server.address)
        podium.close()
        podium.close()  # idempotent
        with pytest.raises(ConnectionLost, match="closed"):
            podium.stats()


async def test_a_write_a_follower_refuses_goes_to_the_leader_it_names() -> None:
    """Leader election (issue 20): ``not_leader`` names the leader; the put is sent there,
    and later writes go straight to it while reads stay on the first connection."""
    leader_requests: list[str] = []

    def leader(request: ClientMessage) -> list[Outgoing]:
        leader_requests.append(type(request).__name__)
        return answer(request)

    async with fake_server(leader) as at_leader:

        def follower(request: ClientMessage) -> list[Outgoing]:
            if isinstance(request, Put | Delete):
                refusal = ErrorReply(
                    id=request.id,
                    code="not_leader",
                    message="this replica does not lead",
                    leader=at_leader.address,
                )
                return [refusal]
            return answer(request)

        with trio.fail_after(5):
            async with fake_server(follower) as at_follower, connect(at_follower.address) as c:
                reply = await c.put([make_pod("web").obj()])
                assert reply.revision == 8
                await c.put([make_pod("db").obj()])
                await c.get("Node")
    assert leader_requests == ["Put", "Put"]


async def test_a_write_waits_while_no_replica_leads_then_fails_naming_why() -> None:
    """Issue 26: ``not_leader`` without a leader is retried until the leader wait is over,
    then fails with LeaderUnavailable (the write was not done)."""

    def follower(request: ClientMessage) -> list[Outgoing]:
        return [ErrorReply(id=request.id, code="not_leader", message="no replica leads")]

    with trio.fail_after(5):
        async with (
            fake_server(follower) as server,
            connect(server.address, leader_wait_seconds=0.3) as c,
        ):
            with pytest.raises(LeaderUnavailable) as caught:
                await c.put([make_pod("web").obj()])
    assert str(caught.value) == (
        f"no podium replica took the write within 0.3 s (podium at {server.address}: "
        "no replica leads)"
    )
    assert len([r for r in server.requests if isinstance(r, Put)]) > 1


async def test_a_write_goes_through_once_a_replica_leads() -> None:
    """The replica connected to refuses with ``not_leader`` naming a dead leader (its lease
    has not run out), then leads itself: the write is done there, once."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{closed.getsockname()[1]}"
    puts: list[int] = []

    def replica(request: ClientMessage) -> list[Outgoing]:
        if isinstance(request, Put):
            puts.append(request.id)
            if len(puts) < 3:
                return [
                    ErrorReply(id=request.id, code="not_leader", message="follows", leader=dead)
                ]
        return answer(request)

    with trio.fail_after(5):
        async with fake_server(replica) as server, connect(server.address) as c:
            reply = await c.put([make_pod("web").obj()])
    assert reply.revision == 8
    assert len(puts) == 3


async def test_several_addresses_use_the_first_that_answers() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{closed.getsockname()[1]}"
    with trio.fail_after(5):
        async with fake_server(answer) as server:
            async with connect(f"{nobody},{server.address}") as c:
                assert c.server == server.address
                assert (await c.stats()).revision >= 0
            with pytest.raises(ServerUnreachable):
                async with connect(f"{nobody},{nobody}"):
                    pass
