"""The extender wire (pkg/scheduler/api/types.go@v1.14): requests as v1.14 encodes its untagged
structs, replies decoded as Go's encoding/json reads them, durations as Go writes them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import msgspec
import pytest
from builders import make_node, make_pod

from podium.protocol.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderConfig,
    ExtenderFilterResult,
    ExtenderPreemptionResult,
    HostPriority,
    NodeList,
    decode_reply,
    encode_request,
    fold_extender_configs,
    parse_duration_seconds,
)


@dataclass(frozen=True)
class Reply:
    name: str
    body: str
    type_: Any
    want: Any


REPLIES = [
    Reply(
        "filter: Go names without tags",
        '{"NodeNames": ["a"], "FailedNodes": {"B": "no"}, "Error": ""}',
        ExtenderFilterResult,
        ExtenderFilterResult(node_names=["a"], failed_nodes={"B": "no"}),
    ),
    Reply(
        "filter: as a Go extender without tags encodes it, nil Nodes and all",
        '{"Nodes": null, "NodeNames": ["a", "b"], "FailedNodes": {}, "Error": ""}',
        ExtenderFilterResult,
        ExtenderFilterResult(node_names=["a", "b"], failed_nodes={}),
    ),
    Reply(
        "filter: api/v1 tags",
        '{"nodenames": ["a"], "failedNodes": {"B": "no"}}',
        ExtenderFilterResult,
        ExtenderFilterResult(node_names=["a"], failed_nodes={"B": "no"}),
    ),
    Reply(
        "filter: any case; map keys (node names) kept as written",
        '{"NODENAMES": ["a"], "failednodes": {"Node-B": "x"}}',
        ExtenderFilterResult,
        ExtenderFilterResult(node_names=["a"], failed_nodes={"Node-B": "x"}),
    ),
    Reply(
        "filter: null is absent, unknown fields ignored",
        '{"NodeNames": null, "Nodes": null, "Error": null, "Extra": {"x": 1}}',
        ExtenderFilterResult,
        ExtenderFilterResult(),
    ),
    Reply(
        "filter: the last of two spellings wins, as in Go",
        '{"nodenames": ["a"], "NodeNames": ["b"]}',
        ExtenderFilterResult,
        ExtenderFilterResult(node_names=["b"]),
    ),
    Reply(
        "prioritize: Host/Score and host/score",
        '[{"Host": "a", "Score": 3}, {"host": "b", "score": 7}, {"HOST": "c"}]',
        list[HostPriority],
        [HostPriority(host="a", score=3), HostPriority(host="b", score=7), HostPriority(host="c")],
    ),
    Reply("prioritize: null", "null", list[HostPriority], []),
    Reply(
        "bind: Error",
        '{"error": "nope"}',
        ExtenderBindingResult,
        ExtenderBindingResult(error="nope"),
    ),
    Reply("bind: empty", "{}", ExtenderBindingResult, ExtenderBindingResult()),
]


@pytest.mark.parametrize("case", REPLIES, ids=attrgetter("name"))
def test_replies_decode_as_go_reads_them(case: Reply) -> None:
    assert decode_reply(case.body.encode(), case.type_) == case.want


def test_filter_reply_nodes_are_read_by_name() -> None:
    body = b'{"Nodes": {"Items": [{"Metadata": {"Name": "n1"}, "status": {}}]}, "nodenames": ["x"]}'
    reply = decode_reply(body, ExtenderFilterResult)
    assert reply.passing(node_cache_capable=False) == ["n1"]
    assert reply.passing(node_cache_capable=True) == ["x"]
    assert ExtenderFilterResult().passing(node_cache_capable=True) is None


def test_preempt_reply_keeps_node_names_and_reads_uids() -> None:
    body = (
        b'{"nodeNameToMetaVictims": {"Node-1": {"pods": [{"uid": "u1"}], "NumPDBViolations": 2}}}'
    )
    reply = decode_reply(body, ExtenderPreemptionResult)
    assert reply.node_name_to_meta_victims is not None
    victims = reply.node_name_to_meta_victims["Node-1"]
    assert ([p.uid for p in victims.pods], victims.num_pdb_violations) == (["u1"], 2)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{oops", "JSON is malformed: object keys must be strings (byte 1)"),
        (b'[{"Host": "a", "Score": "high"}]', "Expected `int`, got `str` - at `$[0].Score`"),
        (b'{"Host": "a"}', "Expected `array`, got `object`"),
    ],
)
def test_garbage_is_a_decode_error(body: bytes, error: str) -> None:
    with pytest.raises(msgspec.DecodeError) as caught:
        decode_reply(body, list[HostPriority])
    assert str(caught.value) == error


def test_requests_use_v1_14_go_names_and_null_for_the_unused_list() -> None:
    pod = make_pod("p").uid("u").obj()
    by_name = json.loads(encode_request(ExtenderArgs(pod=pod, node_names=["n1"])))
    assert set(by_name) == {"Pod", "Nodes", "NodeNames"}
    assert (by_name["Nodes"], by_name["NodeNames"]) == (None, ["n1"])
    assert by_name["Pod"]["metadata"] == {"name": "p", "namespace": "default", "uid": "u"}
    whole = json.loads(
        encode_request(ExtenderArgs(pod=pod, nodes=NodeList(items=[make_node("n1").obj()])))
    )
    assert whole["NodeNames"] is None
    assert whole["Nodes"]["items"][0]["metadata"]["name"] == "n1"
    bind = json.loads(
        encode_request(ExtenderBindingArgs(pod_name="p", pod_namespace="d", pod_uid="u", node="n"))
    )
    assert bind == {"PodName": "p", "PodNamespace": "d", "PodUID": "u", "Node": "n"}


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(0, 0.0), (5_000_000_000, 5.0), ("250ms", 0.25), ("1m30s", 90.0), ("1.5s", 1.5), ("0", 0.0)],
)
def test_durations_are_go_durations(value: int | str, seconds: float) -> None:
    assert parse_duration_seconds(value) == seconds


@pytest.mark.parametrize("value", ["5", "soon", "5 s", "-1s", True])
def test_bad_durations(value: Any) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration_seconds(value)


def test_config_keys_match_case_insensitively() -> None:
    """As the configuration file and a Policy decode their ``extenders`` (protocol/config.py,
    protocol/policy.py): folded, then converted."""
    entry = {
        "URLPrefix": "https://x/",
        "FilterVerb": "f",
        "BindVerb": "b",
        "EnableHTTPS": True,
        "TLSConfig": {"Insecure": True, "ServerName": "ext"},
        "HTTPTimeout": 1_000_000_000,
        "NodeCacheCapable": True,
        "ManagedResources": [{"Name": "example.com/w", "IgnoredByScheduler": True}],
        "Ignorable": True,
    }
    (folded,) = fold_extender_configs({"extenders": [entry]})["extenders"]
    config = msgspec.convert(folded, type=ExtenderConfig)
    assert (config.filter_verb, config.bind_verb, config.timeout_seconds) == ("f", "b", 1.0)
    assert config.enable_https and config.node_cache_capable and config.ignorable
    assert config.tls_config is not None and config.tls_config.server_name == "ext"
    assert config.managed_resources[0].ignored_by_scheduler
