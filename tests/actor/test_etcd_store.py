"""What only the etcd store does: the key mapping (objects by kind/namespace/
name, one event key per Podium revision, the meta key), batches split past etcd's transaction
bounds and made whole again at start, one writer per prefix, a lost answer found out, and the
prefixes it refuses. The backend-neutral behaviour is in test_durable_store.py.

Real etcd (the session's member, tests/support/etcd_servers.py), real clock, each test under
``fail_after``.
"""

from __future__ import annotations

import base64
import json
import urllib.request
import uuid
from typing import Any

import msgspec
import pytest
import trio
from builders import make_node, make_pod
from etcd_servers import EtcdCluster
from store_backends import etcd_range

from podium.protocol.errors import CommitRefused, DatabaseDamaged, StoreError
from podium.protocol.objects import Container, PersistentVolume, PersistentVolumeClaim, Pod
from podium.store import tuning
from podium.store.core import StoreCore
from podium.store.etcd.client import EtcdUnknownOutcome
from podium.store.etcd.durability import EtcdDurability
from podium.store.etcd.replies import Reply
from podium.store.location import EtcdLocation, parse_store_url
from podium.store.mail import Binding, Change


@pytest.fixture
def location(etcd_member: EtcdCluster) -> EtcdLocation:
    where = parse_store_url(etcd_member.url(f"unit-{uuid.uuid4().hex[:12]}"))
    assert isinstance(where, EtcdLocation)
    return where


def _put(endpoint: str, key: str, value: bytes) -> None:
    body = json.dumps(
        {"key": base64.b64encode(key.encode()).decode(), "value": base64.b64encode(value).decode()}
    ).encode()
    request = urllib.request.Request(f"http://{endpoint}/v3/kv/put", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=5):
        pass


def _nodes(core: StoreCore, names: list[str]) -> list[Change]:
    _, _, changes = core.write(
        [make_node(n).capacity(cpu="4", memory="8Gi", pods=110).obj() for n in names], []
    )
    return changes


def _meta(location: EtcdLocation) -> dict[str, Any]:
    ((_, value),) = etcd_range(location.endpoints[0], location.prefix + "meta/")
    meta: dict[str, Any] = json.loads(value)
    return meta


async def test_the_key_mapping(location: EtcdLocation) -> None:
    durability = EtcdDurability(location)
    with trio.fail_after(10):
        assert (await durability.load()).revision == 0
        core = StoreCore()
        await durability.commit(_nodes(core, ["n1", "n2"]))
        _, _, pod = core.write([make_pod("web").obj()], [])
        await durability.commit(pod)
        await durability.close()
    keys = [k for k, _ in etcd_range(location.endpoints[0], location.prefix)]
    p = location.prefix
    assert keys == [
        f"{p}events/00000000000000000001",
        f"{p}events/00000000000000000002",
        f"{p}events/00000000000000000003",
        f"{p}meta/revision",
        f"{p}objects/Node//n1",
        f"{p}objects/Node//n2",
        f"{p}objects/Pod/default/web",
    ]
    meta = _meta(location)
    assert (meta["schema"], meta["revision"], meta["applied"]) == (1, 3, 3)


async def test_a_batch_past_the_txn_bounds_is_split_and_recovered_whole(
    location: EtcdLocation,
) -> None:
    durability = EtcdDurability(location, max_txn_ops=8)
    txns = 0
    send = durability._client.call

    async def counting(
        op: str, path: str, body: dict[str, Any], reply_type: type[Reply], **kw: bool
    ) -> Reply:
        nonlocal txns
        if path == "/v3/kv/txn" and "compare" in body:
            txns += 1
            assert len(body["success"]) <= 8
        return await send(op, path, body, reply_type, **kw)

    durability._client.call = counting  # type: ignore[method-assign]  # a counting fake
    with trio.fail_after(10):
        await durability.load()
        core = StoreCore()
        await durability.commit(_nodes(core, [f"n{i:02d}" for i in range(20)]))
        await durability.close()
        # 20 event keys and 20 object keys, 7 beside the meta key in each txn.
        assert txns == 1 + 6
        reopened = EtcdDurability(location)
        again = await reopened.load()
        await reopened.close()
    assert again.revision == 20
    assert sorted(o.metadata.name for o in again.objects) == [f"n{i:02d}" for i in range(20)]


class _Crash(Exception):
    """The process dies here (no later transaction is sent)."""


def _crash_after(durability: EtcdDurability, txns: int) -> None:
    """Let ``txns`` more write transactions through, then die before the next."""
    send = durability._client.call

    async def call(
        op: str, path: str, body: dict[str, Any], reply_type: type[Reply], **kw: bool
    ) -> Reply:
        nonlocal txns
        if path == "/v3/kv/txn" and "compare" in body:
            if txns == 0:
                raise _Crash
            txns -= 1
        return await send(op, path, body, reply_type, **kw)

    durability._client.call = call  # type: ignore[method-assign]  # a dying fake


@pytest.mark.parametrize(
    ("txns_through", "recovered", "events_kept"),
    [
        # 12 ops of events, then 12 of objects, 3 per txn: 4 event txns (the 4th is the
        # commit point), 4 object txns.
        pytest.param(0, 2, 2, id="nothing of the batch written"),
        pytest.param(2, 2, 2, id="event keys written, no commit point: deleted at start"),
        pytest.param(4, 14, 14, id="committed, no object written: replayed at start"),
        pytest.param(6, 14, 14, id="committed, half the objects written: replayed at start"),
    ],
)
async def test_a_split_batch_cut_short_is_all_or_nothing(
    location: EtcdLocation, txns_through: int, recovered: int, events_kept: int
) -> None:
    core = StoreCore()
    with trio.fail_after(10):
        first = EtcdDurability(location)
        await first.load()
        await first.commit(_nodes(core, ["a", "b"]))
        await first.close()
        durability = EtcdDurability(location, max_txn_ops=4)
        await durability.load()
        _crash_after(durability, txns_through)
        with pytest.raises(_Crash):
            await durability.commit(_nodes(core, [f"n{i:02d}" for i in range(12)]))
        await durability.close()
        again = EtcdDurability(location)
        state = await again.load()
        # Read as a watcher does: page after page (each within READ_PAGE_BYTES).
        oldest, log = await again.read_events(0)
        while log and (page := (await again.read_events(log[-1].revision))[1]):
            log += page
        await again.close()
    assert state.revision == recovered
    assert len(state.objects) == recovered
    assert (oldest, [c.revision for c in log]) == (1, list(range(1, events_kept + 1)))
    meta = _meta(location)
    assert (meta["revision"], meta["applied"]) == (recovered, recovered)
    events = etcd_range(location.endpoints[0], location.prefix + "events/")
    assert len(events) == events_kept


async def test_a_second_writer_takes_the_prefix_and_the_first_stops(
    location: EtcdLocation,
) -> None:
    core = StoreCore()
    with trio.fail_after(10):
        first = EtcdDurability(location)
        await first.load()
        await first.commit(_nodes(core, ["n1"]))
        second = EtcdDurability(location)
        assert (await second.load()).revision == 1
        with pytest.raises(StoreError, match="another writer moved meta/revision"):
            await first.commit(_nodes(core, ["n2"]))
        follower = StoreCore()
        follower.restore(1, [])
        await second.commit(_nodes(follower, ["n3"]))
        await first.close()
        await second.close()
    assert [
        k.rsplit("/", 1)[1]
        for k, _ in etcd_range(location.endpoints[0], location.prefix + "objects/")
    ] == ["n1", "n3"]


async def test_two_writers_with_one_host_and_pid_never_take_each_others_txn_as_their_own(
    location: EtcdLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 point 4: two containers on one host name, each its PID 1, without leader
    election. Both read the meta key before either takes the prefix; the second's compare
    fails on the first's takeover, whose meta value (revision, counter, writer) would be the
    one the second sent, byte for byte, had they the same name. The second must stop, not
    take the first's transaction for its own earlier attempt and acknowledge writes etcd
    never kept."""
    core = StoreCore()
    with trio.fail_after(10):
        made = EtcdDurability(location)
        await made.load()
        await made.commit(_nodes(core, ["n0"]))
        await made.close()
    monkeypatch.setattr("socket.gethostname", lambda: "node-1")
    monkeypatch.setattr("os.getpid", lambda: 1)
    writers = [EtcdDurability(location), EtcdDurability(location)]
    ready = trio.Semaphore(0)
    turn = [trio.Event(), trio.Event()]

    def hold_the_takeover(durability: EtcdDurability, index: int) -> None:
        send = durability._client.call
        held = False

        async def call(
            op: str, path: str, body: dict[str, Any], reply_type: type[Reply], **kw: bool
        ) -> Reply:
            nonlocal held
            if path == "/v3/kv/txn" and "compare" in body and not held:
                held = True
                ready.release()
                await turn[index].wait()  # both have read the meta key by now
                try:
                    return await send(op, path, body, reply_type, **kw)
                finally:
                    if index == 0:
                        turn[1].set()
            return await send(op, path, body, reply_type, **kw)

        durability._client.call = call  # type: ignore[method-assign]  # a gate, no fake

    for index, durability in enumerate(writers):
        hold_the_takeover(durability, index)
    outcomes: list[BaseException | None] = [None, None]

    async def load(index: int) -> None:
        try:
            await writers[index].load()
        except StoreError as exc:
            outcomes[index] = exc

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(load, 0)
            nursery.start_soon(load, 1)
            for _ in writers:
                await ready.acquire()
            turn[0].set()
        assert outcomes[0] is None
        assert isinstance(outcomes[1], StoreError), "the second writer took the prefix too"
        assert "another writer moved meta/revision (now written by node-1:1_" in str(outcomes[1])
        await writers[0].commit(_nodes(core, ["n1"]))
        for durability in writers:
            await durability.close()
    assert _meta(location)["writer"].startswith("node-1:1_")


async def test_a_txn_whose_answer_was_lost_is_found_applied(location: EtcdLocation) -> None:
    core = StoreCore()
    durability = EtcdDurability(location)
    send = durability._client.call
    lose = True

    async def call(
        op: str, path: str, body: dict[str, Any], reply_type: type[Reply], **kw: bool
    ) -> Reply:
        nonlocal lose
        answer = await send(op, path, body, reply_type, **kw)
        if path == "/v3/kv/txn" and "compare" in body and lose:
            lose = False
            raise EtcdUnknownOutcome("the answer was lost")
        return answer

    with trio.fail_after(10):
        await durability.load()
        durability._client.call = call  # type: ignore[method-assign]  # a lossy fake
        await durability.commit(_nodes(core, ["n1"]))
        assert not lose
        await durability.commit(_nodes(core, ["n2"]))  # the meta mod revision was read back
        await durability.close()
        reopened = EtcdDurability(location)
        state = await reopened.load()
        await reopened.close()
    assert state.revision == 2


async def test_a_prefix_from_a_newer_podium_is_refused(location: EtcdLocation) -> None:
    meta = {"schema": 99, "revision": 0, "applied": 0}
    _put(location.endpoints[0], location.prefix + "meta/revision", json.dumps(meta).encode())
    durability = EtcdDurability(location)
    with trio.fail_after(10), pytest.raises(StoreError, match="made by a newer Podium"):
        await durability.load()
    await durability.close()


@pytest.mark.parametrize(
    ("keys", "problem"),
    [
        pytest.param(
            {"objects/Node//n1": b"x"}, "holds keys .* but no meta/revision", id="no meta key"
        ),
        pytest.param(
            {"meta/revision": b"{not json"}, "meta/revision that does not decode", id="bad meta"
        ),
        pytest.param(
            {"meta/revision": b'{"schema":1,"revision":3,"applied":3}'},
            "has meta revision 3 but its event log is empty",
            id="the log is gone",
        ),
        pytest.param(
            {
                "meta/revision": b'{"schema":1,"revision":0,"applied":0}',
                "objects/Node//n1": b"\xff\xfe",
            },
            "object key .*Node//n1.* does not decode",
            id="an object that does not decode",
        ),
    ],
)
async def test_a_damaged_prefix_is_refused(
    location: EtcdLocation, keys: dict[str, bytes], problem: str
) -> None:
    for key, value in keys.items():
        _put(location.endpoints[0], location.prefix + key, value)
    durability = EtcdDurability(location)
    with trio.fail_after(10), pytest.raises(DatabaseDamaged, match=problem):
        await durability.load()
    await durability.close()


async def test_etcd_history_is_compacted_one_round_behind(location: EtcdLocation) -> None:
    core = StoreCore()
    durability = EtcdDurability(location, compaction_interval=1e-9)
    with trio.fail_after(10):
        await durability.load()
        marks = []
        for name in ("n1", "n2", "n3"):
            await durability.commit(_nodes(core, [name]))
            marks.append(durability._meta_mod)
        # The third commit compacted up to the second's etcd revision, not its own.
        with pytest.raises(StoreError, match="required revision has been compacted"):
            await durability._range(location.prefix.encode(), None, revision=marks[1] - 1)
        kvs, _ = await durability._range(
            location.prefix.encode() + b"meta/revision", None, revision=marks[1]
        )
        assert len(kvs) == 1
        await durability.close()


async def test_a_batch_longer_than_the_retention_is_compacted_without_its_own_keys(
    location: EtcdLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 25 point 7: the compaction's delete range covered event keys the same txn put,
    # and etcd refused the txn ("duplicate key given in txn request").
    monkeypatch.setattr(tuning, "COMPACT_EVERY", 16)
    core = StoreCore()
    durability = EtcdDurability(location, retention=10)
    with trio.fail_after(10):
        await durability.load()
        for batch in range(3):
            await durability.commit(_nodes(core, [f"n{batch}-{i:02d}" for i in range(30)]))
        # Read as a watcher does: page after page (each within READ_PAGE_BYTES).
        oldest, log = await durability.read_events(60)
        while log and (page := (await durability.read_events(log[-1].revision))[1]):
            log += page
        await durability.close()
    # Each batch compacts the log up to itself, keeping its own 30 keys (more than the
    # retention); the log is whole from its oldest revision to the last.
    assert oldest == 61
    assert [c.revision for c in log] == list(range(61, 91))
    assert _meta(location)["revision"] == 90


def _big_pod(core: StoreCore, name: str, stored_bytes: int) -> list[Change]:
    pod = make_pod(name).obj()
    containers = [Container(name=f"c{i}", image="i" * (stored_bytes // 100)) for i in range(100)]
    pod = msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, containers=containers)
    )
    _, _, changes = core.write([pod], [])
    return changes


async def test_a_change_over_the_request_limit_is_refused_before_it_is_sent(
    location: EtcdLocation,
) -> None:
    core = StoreCore()
    durability = EtcdDurability(location)
    with trio.fail_after(10):
        await durability.load()
        await durability.commit(_nodes(core, ["n1"]))
        batch = _nodes(core, ["n2"]) + _big_pod(core, "big", 1_600_000)
        with pytest.raises(CommitRefused, match="Pod default/big would be a 16") as refused:
            await durability.commit(batch)
        assert refused.value.code == "too_large"
        core.undo(batch)
        await durability.commit(_nodes(core, ["n3"]))
        await durability.close()
        again = EtcdDurability(location)
        state = await again.load()
        await again.close()
    assert (state.revision, sorted(o.metadata.name for o in state.objects)) == (2, ["n1", "n3"])


async def test_a_transaction_etcd_refuses_commits_nothing_and_leaves_no_keys(
    location: EtcdLocation,
) -> None:
    # The durability believes etcd takes 8 MiB (podium.etcd.maxRequestBytes set too high):
    # etcd's own refusal, in the third transaction of a split batch, is the backstop.
    core = StoreCore()
    durability = EtcdDurability(location, max_txn_ops=4, max_request_bytes=8 << 20)
    with trio.fail_after(10):
        await durability.load()
        await durability.commit(_nodes(core, ["a"]))
        batch = _nodes(core, [f"n{i}" for i in range(6)]) + _big_pod(core, "big", 1_600_000)
        with pytest.raises(CommitRefused, match="request is too large") as refused:
            await durability.commit(batch)
        assert refused.value.code == "too_large"
        core.undo(batch)
        # The event keys the first two transactions wrote above the revision are gone.
        events = etcd_range(location.endpoints[0], location.prefix + "events/")
        assert [k.rsplit("/", 1)[1].lstrip("0") for k, _ in events] == ["1"]
        await durability.commit(_nodes(core, ["b"]))
        await durability.close()
        again = EtcdDurability(location)
        state = await again.load()
        await again.close()
    assert (state.revision, sorted(o.metadata.name for o in state.objects)) == (2, ["a", "b"])
    assert (_meta(location)["revision"], _meta(location)["applied"]) == (2, 2)


def _gang(core: StoreCore, size: int) -> tuple[list[Change], list[Change]]:
    """A gang of ``size`` members, each with its claim on a volume of its own: the changes
    that write it (nodes, volumes, claims, pods), and those of its one bind (3 a member)."""
    claims = [
        msgspec.convert(
            {"kind": "PersistentVolumeClaim", "metadata": {"name": f"c{i}", "namespace": "ml"}},
            PersistentVolumeClaim,
        )
        for i in range(size)
    ]
    volumes = [
        msgspec.convert(
            {"kind": "PersistentVolume", "metadata": {"name": f"pv{i}"}}, PersistentVolume
        )
        for i in range(size)
    ]
    pods = [make_pod(f"w{i}").ns("ml").pvc(f"c{i}").obj() for i in range(size)]
    nodes = _nodes(core, ["n1"])
    _, statuses, written = core.write([*volumes, *claims, *pods], [])
    uids = {s.name: s.uid for s in statuses}
    _, bound, failed = core.bind(
        [
            Binding(
                namespace="ml",
                name=f"w{i}",
                uid=uids[f"w{i}"],
                node="n1",
                volumes={f"ml/c{i}": f"pv{i}"},
                group="ml/train",
            )
            for i in range(size)
        ]
    )
    assert not failed
    return nodes + written, bound


@pytest.mark.parametrize(
    ("txns_through", "bound"),
    [
        # 256 members with a claim each: 768 changes, 768 event keys then 768 object keys, 127
        # operations beside the meta key in each of 13 txns (--max-txn-ops 128, the default
        # of etcd and of EtcdDurability); the 7th holds the last event keys: the commit point.
        pytest.param(0, 0, id="nothing written"),
        pytest.param(6, 0, id="every event key but the last few: no commit point"),
        pytest.param(7, 256, id="the commit point: replayed at start"),
        pytest.param(10, 256, id="some object keys: replayed at start"),
        pytest.param(None, 256, id="all 13 transactions"),
    ],
)
async def test_a_gang_past_the_txn_bounds_is_one_commit_a_crash_binds_all_or_none(
    location: EtcdLocation, txns_through: int | None, bound: int
) -> None:
    """A pod group's bind is one batch: however many etcd transactions it takes, one of them
    is its commit point, so a crash at any transaction leaves every member bound (with its
    volume) or none. No etcd bound limits a gang's size (issue 24)."""
    core = StoreCore()
    with trio.fail_after(20):
        first = EtcdDurability(location)
        await first.load()
        written, binds = _gang(core, 256)
        await first.commit(written)
        await first.close()
        assert len(binds) == 768
        durability = EtcdDurability(location)
        await durability.load()
        txns = 0
        send = durability._client.call

        async def counting(
            op: str, path: str, body: dict[str, Any], reply_type: type[Reply], **kw: bool
        ) -> Reply:
            nonlocal txns
            if path == "/v3/kv/txn" and "compare" in body:
                if txns == txns_through:
                    raise _Crash
                txns += 1
                assert len(body["success"]) <= 128
            return await send(op, path, body, reply_type, **kw)

        durability._client.call = counting  # type: ignore[method-assign]  # a dying fake
        if txns_through is None:
            await durability.commit(binds)
            assert txns == 13
        else:
            with pytest.raises(_Crash):
                await durability.commit(binds)
        await durability.close()
        again = EtcdDurability(location)
        state = await again.load()
        await again.close()
    pods = [p for p in state.objects if isinstance(p, Pod)]
    claims = [c for c in state.objects if isinstance(c, PersistentVolumeClaim)]
    pvs = [v for v in state.objects if isinstance(v, PersistentVolume)]
    assert len(pods) == len(claims) == len(pvs) == 256
    assert sum(1 for p in pods if p.spec.node_name) == bound
    assert sum(1 for c in claims if c.spec.volume_name) == bound
    assert sum(1 for v in pvs if v.spec.claim_ref is not None) == bound
    assert state.revision == 1 + 768 + (768 if bound else 0)
