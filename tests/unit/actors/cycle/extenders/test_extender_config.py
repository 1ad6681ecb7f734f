"""Where extenders come from (a Policy, the configuration file's ``extenders:``) and whom they
are sent (v1.14 ``TestIsInterested``, pkg/scheduler/core/extender_test.go@v1.14)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest
from builders import PodBuilder, make_node, make_pod

from podium.actors.cache.core import SchedulerCache
from podium.actors.cycle.extenders import HTTPExtender
from podium.actors.plugins.general_predicates import GeneralPredicates
from podium.actors.supervisor.supervisor import load_plugin_set
from podium.protocol.config import decode_config
from podium.protocol.errors import ConfigError, PolicyError
from podium.protocol.extender import ExtenderConfig, ExtenderManagedResource


def test_the_configuration_file_may_carry_extenders() -> None:
    config = decode_config(
        {
            "extenders": [
                {"URLPrefix": "http://127.0.0.1:9/x", "filterVerb": "filter", "httpTimeout": "2s"}
            ]
        },
        source="podium.yaml",
    )
    assert [(e.url_prefix, e.filter_verb, e.timeout_seconds) for e in config.extenders] == [
        ("http://127.0.0.1:9/x", "filter", 2.0)
    ]


def test_the_configuration_files_extenders_are_checked_as_a_policys() -> None:
    with pytest.raises(ConfigError) as caught:
        decode_config(
            {"extenders": [{"urlPrefix": "http://a/", "prioritizeVerb": "p", "wieght": 1}]},
            source="podium.yaml",
        )
    assert [path for path, _ in caught.value.problems] == ["extenders[0].wieght"]
    with pytest.raises(ConfigError) as caught:
        decode_config(
            {"extenders": [{"urlPrefix": "http://a/", "prioritizeVerb": "p"}]},
            source="podium.yaml",
        )
    assert list(caught.value.problems) == [
        (
            "extenders[0].weight",
            "Priority for extender http://a/ should have a positive weight applied to it",
        )
    ]


def test_policy_extenders_run_first_then_the_configurations(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(
        '{"extenders": [{"urlPrefix": "http://policy/", "filterVerb": "f", '
        '"managedResources": [{"name": "example.com/a", "ignoredByScheduler": true}]}]}'
    )
    config = decode_config(
        {"extenders": [{"urlPrefix": "http://config/", "bindVerb": "b"}]}, source=None
    )
    plugins = load_plugin_set(config, str(policy))
    assert [e.url_prefix for e in plugins.extenders] == ["http://policy/", "http://config/"]
    fits = next(f for f in plugins.filters.filters if f.name == "GeneralPredicates")
    assert isinstance(fits, GeneralPredicates)
    assert fits.resources.ignored == frozenset({"example.com/a"})


def test_one_binder_over_the_policy_and_the_configuration(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text('{"extenders": [{"urlPrefix": "http://policy/", "bindVerb": "bind"}]}')
    config = decode_config(
        {"extenders": [{"urlPrefix": "http://config/", "bindVerb": "b"}]}, source="podium.yaml"
    )
    with pytest.raises(PolicyError) as caught:
        load_plugin_set(config, str(policy))
    assert list(caught.value.problems) == [
        ("extenders[1].bindVerb", "Only one extender can implement bind, found 2")
    ]


@dataclass(frozen=True)
class Interest:
    name: str
    managed: tuple[str, ...]
    pod: PodBuilder
    want: bool


# v1.14 TestIsInterested: "memory" stands for a managed resource there (a policy would refuse
# it as not an extended resource name; the check itself takes any name).
INTERESTS = [
    Interest("Empty managed resources", (), make_pod("p"), True),
    Interest("Managed memory, empty resources", ("memory",), make_pod("p").container("app"), False),
    Interest(
        "Managed memory, container memory",
        ("memory",),
        make_pod("p").container("app", requests={"memory": "0"}, limits={"memory": "0"}),
        True,
    ),
    Interest(
        "Managed memory, init container memory",
        ("memory",),
        make_pod("p").container("app").init_req({"memory": "0"}),
        True,
    ),
]


@pytest.mark.parametrize("case", INTERESTS, ids=attrgetter("name"))
async def test_is_interested(case: Interest) -> None:
    extender = HTTPExtender(
        ExtenderConfig(
            url_prefix="http://x/",
            managed_resources=[ExtenderManagedResource(name=n) for n in case.managed],
        )
    )
    try:
        assert extender.is_interested(case.pod.info()) is case.want
    finally:
        await extender.aclose()


@pytest.mark.parametrize("ignored", [False, True], ids=["checked", "ignoredByScheduler"])
def test_assume_rechecks_resources_without_the_ignored_ones(ignored: bool) -> None:
    cache = SchedulerCache(
        ignored_extended_resources=frozenset({"example.com/widget"}) if ignored else frozenset()
    )
    cache.add_node(make_node("n1").capacity(cpu="2", memory="1Gi", pods=10).obj())
    decided_at = cache.generation
    cache.add_pod(make_pod("other").node("n1").req(cpu="100m").obj())  # the node changed
    widget = make_pod("p").req_map({"cpu": "100m", "example.com/widget": "1"}).info()
    answer = cache.assume(widget, "n1", decided_at)
    if ignored:
        assert answer is None
    else:
        assert answer == (
            "pod default/p no longer fits node n1 (Insufficient example.com/widget); "
            f"the node changed after generation {decided_at}"
        )


def test_unusable_tls_files_are_a_policy_error_naming_the_extender(tmp_path: Path) -> None:
    config = decode_config(
        {
            "extenders": [
                {"urlPrefix": "http://plain/"},
                {
                    "urlPrefix": "https://secure/",
                    "enableHttps": True,
                    "tlsConfig": {"caFile": str(tmp_path / "missing.pem")},
                },
            ]
        },
        source=None,
    )
    with pytest.raises(PolicyError) as caught:
        load_plugin_set(config)
    assert list(caught.value.problems) == [
        ("extenders[1].tlsConfig", "[Errno 2] No such file or directory")
    ]
