"""Extenders over real HTTP: a threaded server on loopback (tests/support/extender_server.py),
plain and TLS, answering each v1.14 verb; the scheduler's side is :class:`Extenders` as the
actors call it. Every test has a time limit; none asserts a duration.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import pytest
import trio
from builders import make_node, make_pod
from extender_fakes import decide_with_extenders
from extender_server import (
    HANG,
    BindLog,
    ExtenderServer,
    Handler,
    filter_nodes,
    garbage,
    make_certificates,
    preempt_sparing,
    prioritize,
    reply,
    status,
)
from gangs import member, pod_group
from servers import require_server

from podium.actors.cycle.extenders import Extenders
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.interface import PluginArgs
from podium.actors.framework.preemption import PredicateFitCheck
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_resources_fit import PodFitsResources
from podium.protocol import metrics
from podium.protocol.extender import (
    ExtenderConfig,
    ExtenderManagedResource,
    ExtenderTLSConfig,
)

NODES = ("n1", "n2", "n3", "n4")


def _snapshot() -> Snapshot:
    return Snapshot([make_node(n).capacity(cpu="4", memory="8Gi", pods=10).info() for n in NODES])


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    with ExtenderServer() as s:
        yield s


async def _decide(configs: list[ExtenderConfig], *, explain: bool = False) -> ScheduleResult:
    with trio.fail_after(20):
        async with Extenders(configs) as extenders:
            return await decide_with_extenders(
                FilterStage([]),
                ScoreStage([]),
                extenders,
                make_pod("p").info(),
                _snapshot(),
                explain=explain,
            )


# --------------------------------------------------------------------------- filter


@pytest.mark.parametrize("tagged", [False, True], ids=["Go names", "api/v1 tags"])
@pytest.mark.parametrize("cache_capable", [True, False], ids=["nodeCacheCapable", "nodes"])
async def test_filter_narrows_and_its_reasons_join_the_fit_error(
    server: ExtenderServer, cache_capable: bool, tagged: bool
) -> None:
    server.handlers["filter"] = filter_nodes(
        lambda n: None if n == "n3" else f"{n} has no widget", tagged=tagged
    )
    config = ExtenderConfig(
        url_prefix=server.url, filter_verb="filter", node_cache_capable=cache_capable
    )
    result = await _decide([config], explain=True)
    assert result.node == "n3"
    assert result.feasible == 1
    assert result.failed["n1"] == (f"extender {server.url}: n1 has no widget",)
    verb, args = server.requests[0]
    assert verb == "filter"
    assert args["Pod"]["metadata"]["name"] == "p"
    if cache_capable:
        assert (args["Nodes"], args["NodeNames"]) == (None, list(NODES))
    else:
        assert args["NodeNames"] is None
        assert [i["metadata"]["name"] for i in args["Nodes"]["items"]] == list(NODES)


async def test_extenders_filter_in_order_each_seeing_what_the_last_left() -> None:
    with (
        ExtenderServer({"filter": filter_nodes(lambda n: "no" if n == "n1" else None)}) as first,
        ExtenderServer({"filter": filter_nodes(lambda n: "nor" if n != "n4" else None)}) as second,
    ):
        configs = [
            ExtenderConfig(url_prefix=s.url, filter_verb="filter", node_cache_capable=True)
            for s in (first, second)
        ]
        result = await _decide(configs)
    assert second.requests[0][1]["NodeNames"] == ["n2", "n3", "n4"]
    assert result.node == "n4"
    assert result.reasons == Counter({"no": 1, "nor": 2})


async def test_a_fit_error_counts_the_extenders_reasons(server: ExtenderServer) -> None:
    server.handlers["filter"] = filter_nodes(lambda n: "out of widgets")
    config = ExtenderConfig(url_prefix=server.url, filter_verb="filter", node_cache_capable=True)
    result = await _decide([config])
    assert (result.node, result.error) == (None, False)
    assert result.message == "0/4 nodes are available: 4 out of widgets."


# --------------------------------------------------------------------------- failures


@dataclass(frozen=True)
class Failure:
    name: str
    handler: Handler
    message: str  # what a non-ignorable extender fails the attempt with ({url} is its prefix)


FAILURES = [
    Failure("a 500", status(500), "Failed filter with extender at URL {url}/filter, code 500"),
    Failure("hangs past the timeout", HANG, "extender {url}: filter timed out after 0.3s"),
    Failure(
        "garbage",
        garbage(),
        "extender {url}: filter reply does not decode: JSON is malformed: object keys must be strings (byte 1)",
    ),
    Failure(
        "a wrong type",
        reply({"NodeNames": "n1"}),
        "extender {url}: filter reply does not decode: Expected `array | null`, got `str` - at `$.NodeNames`",
    ),
    Failure(
        "a node that was not sent",
        reply({"NodeNames": ["n1", "elsewhere"]}),
        "extender {url}: filter answered node 'elsewhere', which it was not sent",
    ),
    Failure("its Error field", reply({"Error": "widget service down"}), "widget service down"),
]


@pytest.mark.parametrize("ignorable", [True, False], ids=["ignorable", "not ignorable"])
@pytest.mark.parametrize("failure", FAILURES, ids=attrgetter("name"))
async def test_a_failing_filter_fails_the_pod_unless_ignorable(
    server: ExtenderServer, failure: Failure, ignorable: bool
) -> None:
    server.handlers["filter"] = failure.handler
    config = ExtenderConfig(
        url_prefix=server.url,
        filter_verb="filter",
        node_cache_capable=True,
        http_timeout="300ms",
        ignorable=ignorable,
    )
    before = metrics.REGISTRY.get_sample_value(
        "podium_extender_errors_total", {"extender": server.url, "verb": "filter"}
    )
    result = await _decide([config])
    if ignorable:
        assert (result.error, result.feasible) == (False, 4)
        assert result.node in NODES
    else:
        assert (result.error, result.node) == (True, None)
        assert result.message == failure.message.format(url=server.url)
    after = metrics.REGISTRY.get_sample_value(
        "podium_extender_errors_total", {"extender": server.url, "verb": "filter"}
    )
    assert (after or 0) - (before or 0) == 1


async def test_an_unreachable_extender_is_an_error() -> None:
    with ExtenderServer() as gone:
        url = gone.url
    config = ExtenderConfig(url_prefix=url, filter_verb="filter")
    result = await _decide([config])
    assert result.error
    assert (result.message or "").startswith(f"extender {url}: filter failed: ConnectError")


# --------------------------------------------------------------------------- prioritize


@pytest.mark.parametrize("tagged", [False, True], ids=["Go names", "api/v1 tags"])
async def test_prioritize_scores_times_weights_add_up(tagged: bool) -> None:
    with (
        ExtenderServer(
            {"prioritize": prioritize(lambda n: 10 if n == "n2" else 1, tagged=tagged)}
        ) as a,
        ExtenderServer(
            {"prioritize": prioritize(lambda n: 3 if n == "n3" else 0, tagged=tagged)}
        ) as b,
    ):
        configs = [
            ExtenderConfig(url_prefix=a.url, prioritize_verb="prioritize", weight=1),
            ExtenderConfig(url_prefix=b.url, prioritize_verb="prioritize", weight=4),
        ]
        result = await _decide(configs, explain=True)
    # n2: 10*1 + 0*4 = 10; n3: 1*1 + 3*4 = 13: n3 wins (+1 each from no priorities at all).
    assert result.node == "n3"
    assert result.totals == {"n1": 2, "n2": 11, "n3": 14, "n4": 2}
    assert result.scores["n3"] == {f"extender {a.url}": 1, f"extender {b.url}": 3}
    assert sorted(c[0] for c in result.extender_calls) == sorted([a.url, b.url])


async def test_prioritize_failures_are_ignored_even_when_not_ignorable() -> None:
    with (
        ExtenderServer({"prioritize": HANG}) as slow,
        ExtenderServer({"prioritize": prioritize(lambda n: 5 if n == "n4" else 0)}) as fine,
    ):
        configs = [
            ExtenderConfig(
                url_prefix=slow.url, prioritize_verb="prioritize", weight=9, http_timeout="200ms"
            ),
            ExtenderConfig(url_prefix=fine.url, prioritize_verb="prioritize", weight=1),
        ]
        result = await _decide(configs)
    assert (result.error, result.node) == (False, "n4")
    assert sorted(r for _, _, r, _, _ in result.extender_calls) == ["error", "ok"]


# --------------------------------------------------------------------------- managed resources


@pytest.mark.parametrize(
    ("pod", "interested"),
    [
        (make_pod("plain").req(cpu="1"), False),
        (make_pod("asks").req_map({"example.com/widget": "1"}), True),
        (make_pod("limits").container(limits={"example.com/widget": "1"}), True),
        (make_pod("init").init_req({"example.com/widget": "1"}), True),
    ],
    ids=["no managed resource", "a request", "a limit", "an init container"],
)
async def test_only_pods_asking_for_a_managed_resource_are_sent(
    server: ExtenderServer, pod: Any, interested: bool
) -> None:
    server.handlers["filter"] = filter_nodes(lambda n: None if n == "n2" else "no")
    config = ExtenderConfig(
        url_prefix=server.url,
        filter_verb="filter",
        managed_resources=[ExtenderManagedResource(name="example.com/widget")],
    )
    with trio.fail_after(20):
        async with Extenders([config]) as extenders:
            _, feasible = await extenders.filter(
                pod.info(), _snapshot(), ScheduleResult(feasible=4), [0, 1, 2, 3]
            )
    assert server.verbs() == (["filter"] if interested else [])
    assert feasible == ([1] if interested else [0, 1, 2, 3])


def test_ignored_by_scheduler_resources_are_not_checked_by_pod_fits_resources() -> None:
    pod = make_pod("p").req_map({"example.com/widget": "2", "cpu": "1"}).info()
    node = make_node("n").capacity(cpu="2", memory="1Gi", pods=10).info()
    checked = PodFitsResources(PluginArgs(names.POD_FITS_RESOURCES))
    ignored = PodFitsResources(
        PluginArgs(
            names.POD_FITS_RESOURCES, ignored_extended_resources=frozenset({"example.com/widget"})
        )
    )
    assert checked.filter(pod, None, node).reasons == ("Insufficient example.com/widget",)
    assert ignored.filter(pod, None, node).is_success
    cols = Snapshot([node]).columns
    assert [bool(mask[0]) for _, mask, _ in ignored.filter_columns(pod, None, cols)] == [
        False,
        False,
        False,
        False,
    ]


# --------------------------------------------------------------------------- bind


async def test_bind_goes_to_the_binding_extender_and_reports_refusals(
    server: ExtenderServer,
) -> None:
    log = BindLog(refuse={"no"})
    server.handlers["bind"] = log
    config = ExtenderConfig(url_prefix=server.url, bind_verb="bind")
    yes = make_pod("yes").uid("u-yes").info()
    no = make_pod("no").uid("u-no").info()
    with trio.fail_after(20):
        async with Extenders([config]) as extenders:
            refused, calls = await extenders.bind_all([(yes, "n1"), (no, "n2")])
    assert refused == {"u-no": "refused by the test"}
    assert log.bound == {"u-yes": "n1"}
    args = next(a for v, a in server.requests if a["PodUID"] == "u-yes")
    assert args == {"PodName": "yes", "PodNamespace": "default", "PodUID": "u-yes", "Node": "n1"}
    assert [c[1:3] for c in calls["u-yes"]] == [("bind", "ok")]


async def test_only_interested_pods_are_bound_by_the_extender(server: ExtenderServer) -> None:
    server.handlers["bind"] = BindLog()
    config = ExtenderConfig(
        url_prefix=server.url,
        bind_verb="bind",
        managed_resources=[ExtenderManagedResource(name="example.com/widget")],
    )
    async with Extenders([config]) as extenders:
        assert not extenders.binds(make_pod("plain").info())
        assert extenders.binds(make_pod("w").req_map({"example.com/widget": "1"}).info())


# --------------------------------------------------------------------------- preempt


@pytest.mark.parametrize("cache_capable", [True, False], ids=["nodeCacheCapable", "victims"])
async def test_a_preempt_verb_vetoes_a_victim(server: ExtenderServer, cache_capable: bool) -> None:
    # Two full nodes, each with one low-priority pod; without the extender n1 is picked (the
    # first in order among equals); the extender protects the pod on n1.
    pods = {
        node: make_pod(f"low-{node}").uid(f"uid-{node}").node(node).req(cpu="2").priority(1).obj()
        for node in ("n1", "n2")
    }
    snapshot = Snapshot(
        [make_node(n).capacity(cpu="2", memory="8Gi", pods=10).info(pods[n]) for n in pods]
    )
    preemptor = make_pod("high").req(cpu="2").priority(100).info()
    fits = PredicateFitCheck([PodFitsResources(PluginArgs(names.POD_FITS_RESOURCES))])
    unresolvable: frozenset[str] = frozenset()  # both nodes lack cpu: resolvable
    protected = {"uid-n1"} if cache_capable else {"low-n1"}
    server.handlers["preempt"] = preempt_sparing(protected)
    config = ExtenderConfig(
        url_prefix=server.url, preempt_verb="preempt", node_cache_capable=cache_capable
    )
    with trio.fail_after(20):
        async with Extenders() as none:
            alone = await none.preempt(preemptor, snapshot, unresolvable, fits)
        async with Extenders([config]) as extenders:
            vetoed = await extenders.preempt(preemptor, snapshot, unresolvable, fits)
    assert (alone.node, [v.name for v in alone.victims]) == ("n1", ["low-n1"])
    assert (vetoed.node, [v.name for v in vetoed.victims]) == ("n2", ["low-n2"])
    args = server.requests[0][1]
    if cache_capable:
        assert args["NodeNameToVictims"] is None
        assert args["NodeNameToMetaVictims"]["n2"] == {
            "Pods": [{"UID": "uid-n2"}],
            "NumPDBViolations": 0,
        }
    else:
        assert args["NodeNameToMetaVictims"] is None
        assert args["NodeNameToVictims"]["n1"]["Pods"][0]["metadata"]["name"] == "low-n1"


async def test_a_preempt_reply_naming_an_unknown_pod_ends_the_preemption(
    server: ExtenderServer,
) -> None:
    pod = make_pod("low").uid("uid-low").node("n1").req(cpu="2").priority(1).obj()
    snapshot = Snapshot([make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).info(pod)])
    server.handlers["preempt"] = reply({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "x"}]}}})
    config = ExtenderConfig(url_prefix=server.url, preempt_verb="preempt")
    fits = PredicateFitCheck([PodFitsResources(PluginArgs(names.POD_FITS_RESOURCES))])
    async with Extenders([config]) as extenders:
        result = await extenders.preempt(
            make_pod("high").req(cpu="2").priority(100).info(),
            snapshot,
            frozenset(),  # n1 lacks cpu: resolvable
            fits,
        )
    assert (result.node, result.victims) == (None, ())


async def test_a_preempt_reply_keeps_a_placed_gang_whole(server: ExtenderServer) -> None:
    """A gang of priority 1 has a member on each full node; the extender hands back, for n1,
    only the member on n2 (which the scheduler sent among n1's victims): the pod is found
    among the victims sent, and the gang is completed, so it is evicted whole (issue 24)."""
    members = {
        node: member(f"g-{node}", "g", cpu="2", priority=1, node=node) for node in ("n1", "n2")
    }
    snapshot = Snapshot(
        [make_node(n).capacity(cpu="2", memory="8Gi", pods=10).info(members[n]) for n in members],
        ClusterObjects(pod_groups={"ml/g": pod_group("g", 2)}),
    )
    other = members["n2"].metadata.uid
    server.handlers["preempt"] = reply(
        {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": other}], "NumPDBViolations": 0}}}
    )
    config = ExtenderConfig(url_prefix=server.url, preempt_verb="preempt", node_cache_capable=True)
    fits = PredicateFitCheck([PodFitsResources(PluginArgs(names.POD_FITS_RESOURCES))])
    with trio.fail_after(20):
        async with Extenders([config]) as extenders:
            result = await extenders.preempt(
                make_pod("high").req(cpu="2").priority(100).info(), snapshot, frozenset(), fits
            )
    assert result.node == "n1"
    assert sorted(v.name for v in result.victims) == ["g-n1", "g-n2"]
    sent = server.requests[0][1]["NodeNameToMetaVictims"]
    assert {n: len(v["Pods"]) for n, v in sent.items()} == {"n1": 2, "n2": 2}


# --------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    require_server("openssl", install="apt-get install openssl")
    return make_certificates(tmp_path_factory.mktemp("extender-certs"))


def _inline(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


@pytest.mark.parametrize(
    ("name", "tls", "works"),
    [
        ("CA and client certificate files", "files", True),
        ("CA and client certificate inline", "data", True),
        ("enableHttps without a CA: not verified, as v1.14", "no-ca", True),
        ("no client certificate", "no-client", False),
    ],
    ids=["files", "data", "no CA", "no client certificate"],
)
async def test_tls_with_a_ca_and_a_client_certificate(
    certs: dict[str, str], name: str, tls: str, works: bool
) -> None:
    configs = {
        "files": ExtenderTLSConfig(
            ca_file=certs["ca"], cert_file=certs["client"], key_file=certs["client-key"]
        ),
        "data": ExtenderTLSConfig(
            ca_data=_inline(certs["ca"]),
            cert_data=_inline(certs["client"]),
            key_data=_inline(certs["client-key"]),
        ),
        "no-ca": ExtenderTLSConfig(cert_file=certs["client"], key_file=certs["client-key"]),
        "no-client": ExtenderTLSConfig(ca_file=certs["ca"]),
    }
    with ExtenderServer(
        {"filter": filter_nodes(lambda n: None if n == "n2" else "no")},
        tls=(certs["server"], certs["server-key"]),
        client_ca=certs["ca"],
    ) as server:
        config = ExtenderConfig(
            url_prefix=server.url,
            filter_verb="filter",
            enable_https=True,
            tls_config=configs[tls],
            node_cache_capable=True,
        )
        result = await _decide([config])
    assert (result.node == "n2") is works, result.message
    if not works:
        assert result.error


async def test_tls_refuses_a_server_its_ca_did_not_sign(
    certs: dict[str, str], tmp_path: Path
) -> None:
    other = make_certificates(tmp_path)
    with ExtenderServer(
        {"filter": filter_nodes(lambda n: None)}, tls=(other["server"], other["server-key"])
    ) as server:
        config = ExtenderConfig(
            url_prefix=server.url,
            filter_verb="filter",
            enable_https=True,
            tls_config=ExtenderTLSConfig(ca_file=certs["ca"]),
        )
        result = await _decide([config])
    assert result.error
    assert "CERTIFICATE_VERIFY_FAILED" in (result.message or "")
