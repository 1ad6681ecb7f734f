"""docs/protocol.md against the code it describes: the object kinds and the event examples."""

from __future__ import annotations

import re

import msgspec
import pytest
from repo_paths import DOCS

from podium.protocol.errors import InvalidRequest
from podium.protocol.framing import Codec
from podium.protocol.objects import KINDS, NAMESPACED_KINDS

DOC = (DOCS / "protocol.md").read_text()


def _kinds_in(text: str) -> set[str]:
    return set(re.findall(r"`([A-Z][A-Za-z]+)`", text))


def test_the_object_list_names_every_kind() -> None:
    listed = re.search(r"The kinds are (.*?); `kind` is required", DOC, re.DOTALL)
    assert listed is not None
    assert _kinds_in(listed.group(1)) == set(KINDS)


def test_the_namespaced_kinds_are_the_namespaced_kinds() -> None:
    listed = re.search(r"Namespaced kinds \((.*?)\) default", DOC, re.DOTALL)
    assert listed is not None
    assert _kinds_in(listed.group(1)) == set(NAMESPACED_KINDS)


def test_no_event_example_of_a_pod_change_shows_a_null_object() -> None:
    # Every event the daemon sends carries its object (the pod, for Bound and Unschedulable).
    examples = re.findall(r'\{"msg": "event".*?\}\n```', DOC, re.DOTALL)
    assert examples
    assert all('"object": null' not in example for example in examples)


def test_the_put_rejection_example_is_what_the_daemon_answers() -> None:
    # The request and reply of "When objects are rejected", as the gateway answers it.
    section = DOC[DOC.index("When objects are rejected") :]
    request, reply = re.findall(r"```json\n(.*?)\n```", section, re.DOTALL)[:2]
    codec = Codec("json")
    payload = msgspec.json.encode(msgspec.json.decode(request))
    with pytest.raises(InvalidRequest) as caught:
        codec.decode_request(payload)
    answered = msgspec.json.decode(codec.encode(codec.invalid_reply(payload, caught.value)))
    assert answered == msgspec.json.decode(reply)
