"""Events are written with each event encoded once and shared by every watch, its id spliced in
(``gateway/watch.py``'s ``EncodedObjects``); the bytes must equal encoding the Event itself."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from builders import make_node, make_pod

from podium.actors.gateway.watch import EncodedObjects
from podium.protocol.framing import Codec
from podium.protocol.wire import Event
from podium.store.mail import Change


def event_of(watch_id: int, change: Change) -> Event:
    """The wire event of one committed change, built field by field: the reference the shared
    encoding is held to."""
    return Event(
        id=watch_id,
        revision=change.revision,
        type=change.type,
        kind=change.kind,
        namespace=change.namespace,
        name=change.name,
        object=change.object,
        node=change.node,
        message=change.message,
    )


@dataclass(frozen=True)
class Case:
    name: str
    change: Change


POD = make_pod("web-1").ns("shop").req(cpu="250m", memory="1Gi").labels({"app": "web"}).obj()
NODE = make_node("n1").capacity(cpu="4", memory="32Gi", pods="110").label("zone", "a").obj()

CASES = [
    Case("added pod", Change(revision=7, type="Added", kind="Pod", namespace="shop", name="web-1", object=POD)),
    Case("bound pod", Change(revision=8, type="Bound", kind="Pod", namespace="shop", name="web-1", object=POD, node="n1")),
    Case("unschedulable with a message", Change(revision=9, type="Unschedulable", kind="Pod", namespace="shop", name="web-1", object=POD, message='0/1 nodes are available: 1 Insufficient cpu "quoted".')),
    Case("node", Change(revision=10, type="Modified", kind="Node", namespace="", name="n1", object=NODE)),
]  # fmt: skip


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_shared_frame_equals_the_encoded_event(case: Case, encoding: str) -> None:
    encoded = EncodedObjects()
    want = Codec(encoding).encode(event_of(3, case.change))  # type: ignore[arg-type]
    assert encoded.frame(encoding, 3, case.change) == want
    # Another watch of the same change reuses its bytes and keeps its own id.
    assert encoded.frame(encoding, 41, case.change) == Codec(encoding).encode(  # type: ignore[arg-type]
        event_of(41, case.change)
    )


def test_the_cache_keeps_each_change_beside_its_bytes_and_stays_bounded() -> None:
    encoded = EncodedObjects(size=2)
    changes = [
        Change(revision=i, type="Added", kind="Pod", namespace="shop", name=f"p{i}", object=make_pod(f"p{i}").obj())
        for i in range(5)
    ]  # fmt: skip
    codec = Codec("msgpack")
    for change in changes + changes:
        assert encoded.frame("msgpack", 1, change) == codec.encode(event_of(1, change))
    assert len(encoded._events) == 2


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
@pytest.mark.parametrize("watch_id", [0, 1, 127, 128, 255, 256, 65_536, 2**33])
def test_the_event_is_encoded_once_and_each_watch_id_spliced_in(
    encoding: str, watch_id: int
) -> None:
    # Ids whose encodings differ in width (msgpack fixint, uint8, uint16, uint32, uint64):
    # the bytes around the id are shared, so only the id's own bytes may differ.
    encoded = EncodedObjects()
    change = CASES[1].change
    encoded.frame(encoding, 5, change)
    want = Codec(encoding).encode(event_of(watch_id, change))  # type: ignore[arg-type]
    assert encoded.frame(encoding, watch_id, change) == want
