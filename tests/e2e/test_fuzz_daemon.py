"""Fuzzed frames against a real ``podium serve`` while a well-behaved client keeps working.

One daemon (its SQLite database in a temporary folder) serves the whole module. A good client
runs beside it in its own thread: it puts nodes and pods in its own namespace, reads each one
back, watches them arrive, and asks for stats, over and over. Each Hypothesis example opens
several raw connections, each speaking msgpack or JSON, and sends a mix of frames made by the
strategies of tests/support/frame_fuzzing.py: mutated requests of every kind, arbitrary
values, arbitrary bytes, oversized length prefixes, a truncated frame, a fuzzed hello; frames
are written in arbitrary pieces. What each frame must get is known beforehand from the same
codec: a reply with the request's id, an ``invalid`` error with the request's id and path
(the connection stays), or, where framing is lost, one error with id -1 and the end of the
connection.

Checked: every answer is as predicted, no answer is ``internal``; connections that lost no
framing still answer a ``stats`` at the end; the good client never sees an error and its
watch misses nothing; ``/readyz`` answers 200 and the daemon exits 0 on SIGTERM with no
traceback in its log.

CI runs a short form (about 300 frames); ``PODIUM_FUZZ_EXAMPLES=N`` runs N/20 examples (with
``-o faulthandler_timeout=0``: docs/reliability.md, "Fuzzing", says why).
"""

from __future__ import annotations

import itertools
import os
import struct
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from builders import decode, make_node, make_pod
from daemon import Daemon, start_daemon
from frame_fuzzing import DECODER_DEPTH, VALUES, encode, mutated_requests
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from request_strategies import (
    NAMES,
    NAMESPACES,
    DeleteRequest,
    GetRequest,
    PutRequest,
    WatchRequest,
    pods,
    requests,
)

from podium.protocol.client import RemoteError, connect
from podium.protocol.errors import InvalidRequest, MalformedFrame
from podium.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    Codec,
    FrameReader,
    decode_hello,
    decode_hello_reply,
    frame,
)
from podium.protocol.objects import KubeObject
from podium.protocol.wire import ErrorReply, Event, Request, Stats, StatsReply, Watch

# A failing example holding a megabyte string is printed whole: let the failure, not
# Hypothesis' warning about the size of its report, be what fails.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"
)

EXAMPLES = int(os.environ.get("PODIUM_FUZZ_EXAMPLES", "0")) // 20
"""The long form's examples over 20: each example here is five connections of up to 30 frames."""
CONNECTIONS = 5
FRAMES = 30  # at most, per connection
SENTINEL = 2**62  # the id of each connection's closing stats; fuzzed ids stay below 2**40
IDS = itertools.count(2**40)

# --------------------------------------------------------------------------- the daemon


@dataclass
class GoodClient:
    """A client that only sends valid requests; it must never see an error."""

    address: str
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[BaseException] = field(default_factory=list)
    rounds: int = 0
    watched: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

    def run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported by the fixture
            self.errors.append(exc)

    async def _main(self) -> None:
        async with connect(self.address) as client:
            await client.put(
                [
                    make_node(f"good-{i}").capacity(cpu="8", memory="32Gi", pods=110).obj()
                    for i in range(3)
                ]
            )
            caught_up = trio.Event()
            async with trio.open_nursery() as nursery, client.watch(kinds=["Pod"]) as events:

                async def watch() -> None:
                    async for event in events:
                        if event.namespace == "good" and event.type == "Added":
                            self.watched.append(event.name)
                        if self.stop.is_set() and len(self.watched) >= len(self.written):
                            caught_up.set()

                nursery.start_soon(watch)
                while not self.stop.is_set():
                    name = f"p{self.rounds}"
                    await client.put([make_pod(name).ns("good").req(cpu="10m").obj()])
                    self.written.append(name)
                    got = await client.get("Pod", name=name, namespace="good")
                    assert [p.metadata.name for p in got.items] == [name]
                    stats = await client.stats()
                    assert stats.ready
                    self.rounds += 1
                    await trio.sleep(0.01)
                if len(self.watched) < len(self.written):
                    with trio.fail_after(10):
                        await caught_up.wait()
                nursery.cancel_scope.cancel()


@dataclass
class Served:
    daemon: Daemon
    good: GoodClient
    connections: int = 0
    frames: int = 0
    closed: int = 0
    unsaid: int = 0  # connections closed for lost framing whose error never arrived


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    # Not under pytest's basetemp: another pytest run on the machine removes old basetemps,
    # and with them the database of a daemon that runs for the long form's hours.
    with tempfile.TemporaryDirectory(prefix="podium-fuzz-") as workdir:
        yield from _serve(Path(workdir))


@pytest.fixture
def fresh() -> Iterator[Served]:
    """A daemon of its own (the long form leaves the shared one thousands of pods behind)."""
    with tempfile.TemporaryDirectory(prefix="podium-fuzz-") as workdir:
        yield from _serve(Path(workdir))


def _serve(workdir: Path) -> Iterator[Served]:
    daemon = start_daemon(workdir)
    good = GoodClient(daemon.address)
    thread = threading.Thread(target=good.run, name="good-client")
    thread.start()
    served = Served(daemon, good)
    try:
        yield served
    finally:
        good.stop.set()
        thread.join(timeout=30)
        ready: int | str
        try:
            with urllib.request.urlopen(
                f"http://{daemon.ready['metrics']}/readyz", timeout=10
            ) as response:
                ready = response.status
        except OSError as exc:
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()  # it holds the response's socket
            ready = str(exc)
        code, err = daemon.stop(timeout=30)
        # The daemon's own account first: if it died, that is the story.
        assert code == 0, err[-20_000:]
        assert "Traceback" not in err, err[-20_000:]
        assert ready == 200, ready
        assert not thread.is_alive(), "the good client hung"
        assert not good.errors, good.errors
        assert good.rounds > 0 and good.watched == good.written
        print(
            f"\nfuzz: {served.connections} connections, {served.frames} frames, "
            f"{served.closed} closed for lost framing ({served.unsaid} before their error "
            f"arrived); good client: {good.rounds} rounds"
        )


# --------------------------------------------------------------------------- frames


@dataclass
class Outgoing:
    """One frame to send and what must come back for it."""

    data: bytes
    request: Request | None = None  # sent with a fresh id; some reply carries it
    invalid: tuple[int, str | None] | None = None  # (id, path) of an inline invalid error
    fatal: str | None = None  # the code of the last frame before the daemon closes

    def __repr__(self) -> str:
        # Hypothesis prints failing examples: keep megabyte payloads out of the report.
        what = repr(self.request) if self.request is not None else repr(self.data)
        return f"Outgoing({what[:200]}, invalid={self.invalid!r}, fatal={self.fatal!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))  # Hypothesis' printer would spell out every field


@dataclass
class Plan:
    encoding: str
    hello: bytes
    hello_fatal: bool
    frames: list[Outgoing]
    pieces: list[int]

    def __repr__(self) -> str:
        return (
            f"Plan({self.encoding!r}, hello={self.hello[:200]!r}, "
            f"hello_fatal={self.hello_fatal}, pieces={self.pieces}, frames={self.frames!r})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def predict(codec: Codec, payload: bytes) -> Outgoing:
    """What the daemon will answer, from the codec it uses; valid requests get a fresh id."""
    try:
        msg = codec.decode_request(payload)
    except MalformedFrame:
        return Outgoing(frame(payload), fatal="invalid")
    except InvalidRequest as exc:
        return Outgoing(frame(payload), invalid=(exc.request_id, exc.path))
    assert isinstance(msg, Request)
    if isinstance(msg, Watch):
        msg = msgspec.structs.replace(msg, kinds=["StorageClass"])  # quiet: few events
    return Outgoing(b"", request=msg)


def _as_message(request: Any) -> dict[str, Any]:
    match request:
        case PutRequest():
            return {"msg": "put", "id": 1, "objects": request.objects}
        case DeleteRequest():
            return {"msg": "delete", "id": 1, "refs": request.refs}
        case GetRequest():
            message = {"msg": "get", "id": 1, "kind": request.kind, "name": request.name}
            if request.namespace is not None:
                message["namespace"] = request.namespace
            return message | {"label_selector": request.selector}
        case WatchRequest():
            return {"msg": "watch", "id": 1, "from_revision": request.from_revision}
    raise AssertionError(request)


# Requests that mostly decode, with the odd objects of request_strategies.py: they reach the
# store and the scheduler.
weird_requests = st.one_of(
    requests.map(_as_message),
    st.builds(
        lambda pod, explain: {"msg": "simulate", "id": 1, "pod": pod, "explain": explain},
        pods,
        st.booleans(),
    ),
    st.builds(
        lambda name, namespace: {"msg": "explain", "id": 1, "name": name, "namespace": namespace},
        st.sampled_from(NAMES),
        st.sampled_from(NAMESPACES),
    ),
)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    encoding = draw(st.sampled_from(["msgpack", "json"]))
    codec = Codec(encoding)  # type: ignore[arg-type]
    hello: Any = {"msg": "hello", "protocol": 1, "encoding": encoding}
    if draw(st.integers(0, 9)) == 0:
        hello = draw(VALUES)
    hello_payload = encode(hello, "json")
    try:
        decoded = decode_hello(hello_payload)
        hello_fatal = decoded.protocol != 1
        encoding = decoded.encoding
        codec = Codec(encoding)  # type: ignore[arg-type]
    except (InvalidRequest, MalformedFrame):
        hello_fatal = True
    frames: list[Outgoing] = []
    for _ in range(draw(st.integers(1, FRAMES))):
        source = draw(st.sampled_from(["mutated"] * 5 + ["weird"] * 4 + ["value"]))
        if source == "mutated":
            payload = encode(draw(mutated_requests()).value, encoding)
        elif source == "weird":
            payload = encode(draw(weird_requests), encoding)
        else:
            payload = encode(draw(VALUES), encoding)
        outgoing = predict(codec, payload)
        if outgoing.fatal is None and len(payload) <= DEFAULT_MAX_FRAME_BYTES:
            frames.append(outgoing)
    # Maybe an ending that loses the framing (or, for some bytes, does not).
    ending = draw(st.sampled_from(["none"] * 5 + ["bytes", "huge", "truncated"]))
    if ending == "bytes":
        frames.append(predict(codec, draw(st.binary(max_size=64))))
    elif ending == "huge":
        size = draw(st.sampled_from([DEFAULT_MAX_FRAME_BYTES + 1, 2**31, 2**32 - 1]))
        frames.append(Outgoing(struct.pack(">I", size), fatal="too_large"))
    elif ending == "truncated":
        # Half a frame, then our side closes: the daemon just ends the connection.
        whole = frame(draw(st.binary(min_size=1, max_size=64)))
        frames.append(Outgoing(whole[: draw(st.integers(1, len(whole) - 1))], fatal="eof"))
    pieces = sorted(draw(st.lists(st.integers(0, 1 << 16), max_size=6)))
    return Plan(encoding, hello_payload, hello_fatal, frames, pieces)


# --------------------------------------------------------------------------- a connection


async def receive_all(stream: trio.SocketStream, reader: FrameReader, done: Any) -> list[bytes]:
    """Frames until EOF or until ``done(frames)`` says enough."""
    out: list[bytes] = []
    while True:
        while (payload := reader.next_frame()) is not None:
            out.append(payload)
            if done(out):
                return out
        data = await stream.receive_some(65536)
        if not data:
            return out
        reader.feed(data)


async def session(address: str, plan: Plan, served: Served) -> None:
    host, port = address.rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    served.connections += 1
    reader = FrameReader(2**31)
    async with stream:
        await stream.send_all(frame(plan.hello))
        first = await receive_all(stream, reader, lambda got: len(got) >= 1)
        assert first, "no answer to the hello"
        welcome = decode_hello_reply(first[0])
        if plan.hello_fatal:
            assert isinstance(welcome, ErrorReply), welcome
            assert (welcome.id, welcome.code) == (-1, "invalid")
            assert await receive_all(stream, reader, lambda got: False) == []
            served.closed += 1
            return
        assert not isinstance(welcome, ErrorReply), welcome
        codec = Codec(plan.encoding)  # type: ignore[arg-type]
        answers: set[int] = set()
        for outgoing in plan.frames:
            if outgoing.request is not None:
                request = msgspec.structs.replace(outgoing.request, id=next(IDS))
                outgoing.data = frame(codec.encode(request))
                answers.add(request.id)
        data = b"".join(f.data for f in plan.frames)
        fatal = plan.frames[-1].fatal if plan.frames else None
        if fatal is None:
            data += frame(codec.encode(_stats()))
        served.frames += len(plan.frames)
        cuts = [0, *(c for c in plan.pieces if 0 < c < len(data)), len(data)]
        for start, end in itertools.pairwise(cuts):
            await stream.send_all(data[start:end])
        if fatal == "eof":
            await stream.send_eof()
        invalid = [f.invalid for f in plan.frames if f.invalid is not None]
        seen_sentinel = False

        def done(got: list[bytes]) -> bool:
            nonlocal seen_sentinel
            msg = codec.decode_reply(got[-1])
            note(f"got {got[-1][:300]!r}")
            check_answer(msg)
            if isinstance(msg, Event):
                return False
            if isinstance(msg, ErrorReply) and invalid and (msg.id, msg.path) == invalid[0]:
                assert msg.code == "invalid"
                invalid.pop(0)
            elif msg.id in answers:
                answers.discard(msg.id)
            elif msg.id == SENTINEL:
                assert isinstance(msg, StatsReply)
                seen_sentinel = True
            elif isinstance(msg, ErrorReply) and msg.id == -1:
                assert fatal is not None and msg.code == fatal, (msg, invalid)
                return False  # the connection ends next
            return fatal is None and seen_sentinel and not invalid and not answers

        got = await receive_all(stream, reader, done)
        if fatal is None:
            assert seen_sentinel and not invalid and not answers, (invalid, answers)
            # Still open: another request is answered.
            await stream.send_all(frame(codec.encode(_stats())))
            more = await receive_all(
                stream, reader, lambda got: codec.decode_reply(got[-1]).id == SENTINEL
            )
            assert more and isinstance(codec.decode_reply(more[-1]), StatsReply)
            return
        served.closed += 1
        assert not invalid, f"inline errors missing before the end: {invalid}"
        if fatal in ("invalid", "too_large"):
            last = codec.decode_reply(got[-1]) if got else None
            if not (isinstance(last, ErrorReply) and last.id == -1):
                # The error queues behind the replies already waiting; the daemon gives a
                # connection it closes GOODBYE_SECONDS (1 s) to take them, and a reader
                # slower than that (megabyte lists, decoded in Python) misses the end.
                served.unsaid += 1
            else:
                assert last.code == fatal, last


def decode_object(data: dict[str, Any]) -> KubeObject:
    result: KubeObject = decode(KubeObject, data)
    return result


def _stats() -> Stats:
    return Stats(id=SENTINEL)


def check_answer(msg: Any) -> None:
    if isinstance(msg, ErrorReply):
        assert msg.code != "internal", msg
        if msg.id != -1 and msg.code == "invalid":
            assert msg.path is not None or msg.errors, msg


# --------------------------------------------------------------------------- the test


@settings(
    max_examples=EXAMPLES or 6,
    derandomize=not EXAMPLES,  # as frame_fuzzing.fuzz
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
    # Shrinking replays examples against the shared daemon for minutes; the failing example
    # and the notes (every frame received) are enough.
    phases=[Phase.explicit, Phase.generate],
)
@given(connections=st.lists(plans(), min_size=CONNECTIONS, max_size=CONNECTIONS))
def test_fuzzed_connections_harm_neither_the_daemon_nor_a_good_client(
    served: Served, connections: list[Plan]
) -> None:
    async def main() -> None:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                for plan in connections:
                    nursery.start_soon(session, served.daemon.address, plan, served)

    trio.run(main)
    assert not served.good.errors, served.good.errors


def test_the_daemon_is_still_ready(served: Served) -> None:
    async def main() -> None:
        with trio.fail_after(30):
            async with connect(served.daemon.address) as client:
                assert (await client.stats()).ready

    trio.run(main)


# --------------------------------------------------------------------------- regressions
# What the fuzzing found, each as the daemon answered it before the fix.


async def _raw_session(address: str, encoding: str) -> tuple[trio.SocketStream, FrameReader]:
    host, port = address.rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    hello = encode({"msg": "hello", "protocol": 1, "encoding": encoding}, "json")
    await stream.send_all(frame(hello))
    reader = FrameReader()
    assert await receive_all(stream, reader, lambda got: len(got) == 1)
    return stream, reader


async def _ask(stream: trio.SocketStream, reader: FrameReader, codec: Codec, payload: bytes) -> Any:
    await stream.send_all(frame(payload))
    got = await receive_all(stream, reader, lambda got: len(got) == 1)
    return codec.decode_reply(got[0]) if got else None


def test_found_by_fuzzing_each_answered_and_the_daemon_keeps_serving(fresh: Served) -> None:
    async def main() -> None:
        address = fresh.daemon.address
        json_codec, msgpack_codec = Codec("json"), Codec("msgpack")
        with trio.fail_after(30):
            stream, reader = await _raw_session(address, "json")
            async with stream:
                # A priority beyond int32 was stored, then broke the msgpack encoding of the
                # SQLite commit (which stops the daemon) and of every reply and event.
                big = b'{"kind":"PriorityClass","metadata":{"name":"huge"},"value":' + b"9" * 30
                answer = await _ask(
                    stream, reader, json_codec, b'{"msg":"put","id":1,"objects":[' + big + b"}]}"
                )
                assert (answer.id, answer.code, answer.path) == (1, "invalid", "$.objects[0].value")
                # 1e999 was "malformed": the connection was closed.
                answer = await _ask(
                    stream,
                    reader,
                    json_codec,
                    b'{"msg":"simulate","id":2,"pod":{"kind":"Pod","metadata":{"name":"p"},'
                    b'"spec":{"overhead":{"cpu":1e999}}}}',
                )
                assert (answer.id, answer.path) == (2, "$.pod.spec.overhead['cpu']")
                # Nesting past the recursion limit raised RecursionError: no answer, a traceback.
                depth = DECODER_DEPTH
                deep = b'{"msg":"stats","id":3,"x":' + b"[" * depth + b"]" * depth + b"}"
                answer = await _ask(stream, reader, json_codec, deep)
                assert (answer.id, answer.path) == (3, "$.x" + "[0]" * 11)
                # Still open.
                answer = await _ask(stream, reader, json_codec, b'{"msg":"stats","id":4}')
                assert isinstance(answer, StatsReply)
            # A msgpack string that is not UTF-8 raised UnicodeDecodeError: no answer.
            stream, reader = await _raw_session(address, "msgpack")
            async with stream:
                answer = await _ask(
                    stream,
                    reader,
                    msgpack_codec,
                    b"\x83\xa3msg\xa3get\xa2id\x05\xa4kind\xa2\x00\x80",
                )
                assert (answer.id, answer.code) == (-1, "invalid")
                assert await receive_all(stream, reader, lambda got: False) == []
            async with connect(address) as client:
                # Unknown kinds and future revisions were refused without naming the field.
                with pytest.raises(RemoteError) as refused:
                    await client.get("Deployment")
                assert (refused.value.code, refused.value.path) == ("invalid", "$.kind")
                with pytest.raises(RemoteError) as refused:
                    async with client.watch(from_revision=2**62):
                        pass
                assert (refused.value.code, refused.value.path) == ("invalid", "$.from_revision")
                # Two bound pods whose cpu sums past int64 made every scheduling attempt on
                # the cluster fail (OverflowError building the snapshot's columns).
                huge = "9999999999999999999Ei"
                await client.put(
                    [
                        make_node("regress-big").capacity(cpu=huge).label("regress", "big").obj(),
                        make_node("regress-small")
                        .capacity(cpu="4", memory="8Gi", pods=110)
                        .label("regress", "small")
                        .obj(),
                        *(
                            make_pod(name).ns("regress").req(cpu=huge).node("regress-big").obj()
                            for name in ("a", "b")
                        ),
                    ]
                )
                async with client.watch(kinds=["Pod"]) as events:
                    await client.put(
                        [
                            make_pod("c")
                            .ns("regress")
                            .req(cpu="100m")
                            .node_selector({"regress": "small"})
                            .obj()
                        ]
                    )
                    async for event in events:
                        if (event.namespace, event.name, event.type) == ("regress", "c", "Bound"):
                            assert event.node == "regress-small"
                            break
                # A preemptor with an unbound Immediate claim: the volume predicate's error,
                # met only while preemption re-checked a node, killed the scheduler actor and
                # the daemon with it.
                await client.put(
                    [
                        decode_object(
                            {"kind": "PriorityClass", "metadata": {"name": "regress"}, "value": 9}
                        ),
                        make_node("regress-pv")
                        .capacity(cpu="5", memory="1Gi", pods=10)
                        .label("regress", "pv")
                        .obj(),
                        make_pod("victim").ns("regress").req(cpu="5").node("regress-pv").obj(),
                        decode_object(
                            {
                                "kind": "PersistentVolumeClaim",
                                "metadata": {"name": "unbound", "namespace": "regress"},
                            }
                        ),
                    ]
                )
                preemptor = (
                    make_pod("preemptor")
                    .ns("regress")
                    .req(cpu="5")
                    .node_selector({"regress": "pv"})
                    .pvc("unbound")
                    .spec(priorityClassName="regress")
                    .obj()
                )
                simulated = await client.simulate(preemptor)
                assert simulated.placement.node is None
                # The node preemption re-checked counts the error as its reason.
                message = simulated.placement.message or ""
                assert "1 pod has unbound immediate PersistentVolumeClaims" in message, message
                assert (await client.stats()).ready

    trio.run(main)
