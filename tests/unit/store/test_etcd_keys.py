"""store/etcd/keys.py: the keys under a prefix, in etcd's byte order, and the meta and event
codecs that every daemon writing the prefix must read back."""

from __future__ import annotations

import re

import msgspec
import pytest
from builders import make_node, make_pod

from podium.store.core import StoreCore
from podium.store.etcd.keys import (
    SCHEMA_VERSION,
    KeyLayout,
    Meta,
    decode_event,
    decode_meta,
    encode_event,
    encode_meta,
    prefix_end,
    writer_identity,
)
from podium.store.schema import decode_object

KEYS = KeyLayout(b"team/podium/")


def test_the_layout_under_a_prefix() -> None:
    assert KEYS.meta == b"team/podium/meta/revision"
    assert KEYS.leader == b"team/podium/leader"
    assert KEYS.object("Pod", "default", "web-1") == b"team/podium/objects/Pod/default/web-1"
    assert KEYS.object("Node", "", "n1") == b"team/podium/objects/Node//n1"
    assert KEYS.event(42) == b"team/podium/events/00000000000000000042"
    assert KEYS.revision_of(KEYS.event(42)) == 42


def test_event_keys_sort_as_their_revisions() -> None:
    revisions = [1, 9, 10, 99, 100, 12_345_678_901]
    assert sorted(KEYS.event(r) for r in revisions) == [KEYS.event(r) for r in revisions]


def test_a_key_that_is_not_an_event_has_no_revision() -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        KEYS.revision_of(KEYS.events + b"compacted")


def test_the_range_end_of_a_prefix() -> None:
    assert prefix_end(b"podium/events/") == b"podium/events0"
    assert prefix_end(KEYS.prefix) == b"team/podium0"


def test_the_meta_key_reads_back_and_keeps_its_json_names() -> None:
    meta = Meta(schema=SCHEMA_VERSION, revision=7, applied=5, writer="h:1", n=3)
    encoded = encode_meta(meta)
    assert msgspec.json.decode(encoded) == {
        "schema": 1,
        "revision": 7,
        "applied": 5,
        "writer": "h:1",
        "n": 3,
    }
    assert decode_meta(encoded) == meta
    # An older daemon's meta key, without writer and counter.
    assert decode_meta(b'{"schema":1,"revision":2,"applied":2}') == Meta(
        schema=1, revision=2, applied=2
    )
    with pytest.raises(msgspec.ValidationError, match=r"missing required field `applied`"):
        decode_meta(b'{"schema":1,"revision":2}')


def test_an_event_reads_back_as_its_change_and_carries_its_objects_encoding() -> None:
    core = StoreCore()
    core.write([make_node("n1").capacity(cpu="4", pods=110).obj()])
    _, _, changes = core.write([make_pod("web").obj()])
    (change,) = changes
    value, data = encode_event(change)
    assert decode_object(data) == change.object
    assert decode_event(change.revision, value) == change
    with pytest.raises(msgspec.DecodeError):
        decode_event(change.revision, value[:-3])


def test_a_writer_identity_is_host_pid_and_a_token_drawn_at_each_start() -> None:
    """Two containers on one host name, each its PID 1, are still two writers."""
    first, second = writer_identity("node-1", 1), writer_identity("node-1", 1)
    assert re.fullmatch(r"node-1:1_[0-9a-f]{16}", first)
    assert re.fullmatch(r"node-1:1_[0-9a-f]{16}", second)
    assert first != second
