"""protocol/config.py: KubeSchedulerConfiguration keys, Podium's own keys, defaults and errors."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import pytest
from repo_paths import EXAMPLES

from podium.actors.plugins.policy import load_resolved_policy
from podium.protocol.config import (
    EtcdSettings,
    LeaderElectionSettings,
    PodiumSettings,
    SchedulerConfig,
    TracingSettings,
    decode_config,
    load_config,
)
from podium.protocol.errors import ConfigError

V1ALPHA1 = {
    "apiVersion": "kubescheduler.config.k8s.io/v1alpha1",
    "kind": "KubeSchedulerConfiguration",
}


def test_no_config_gives_the_defaults() -> None:
    config = load_config(None)
    assert config == SchedulerConfig()
    assert (
        config.scheduler_name,
        config.percentage_of_nodes_to_score,
        config.pod_initial_backoff_seconds,
        config.pod_max_backoff_seconds,
        config.policy_file,
        config.hard_pod_affinity_symmetric_weight,
        config.disable_preemption,
        config.bind_timeout_seconds,
        config.warnings,
    ) == ("default-scheduler", 0, 1, 10, None, 10, False, 600, ())
    podium = config.podium
    assert (
        podium.listen,
        podium.unix,
        podium.metrics,
        podium.database,
        podium.synchronous,
        podium.random_seed,
        podium.assumed_pod_ttl_seconds,
        podium.shutdown_grace_period_seconds,
        podium.log_format,
        podium.log_level,
        podium.event_retention_revisions,
        podium.max_frame_bytes,
        podium.max_object_bytes,
        podium.etcd.max_request_bytes,
    ) == (
        "127.0.0.1:7070",
        None,
        "127.0.0.1:7071",
        "./podium.db",
        "normal",
        None,
        30,
        10,
        "text",
        "info",
        1_000_000,
        16 << 20,
        1_572_864,
        1_572_864,
    )
    assert podium.tracing == TracingSettings(endpoint=None, sample_ratio=0.1, console=False)


def test_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "podium.yaml"
    path.write_text("# nothing yet\n")
    assert load_config(path) == SchedulerConfig(source=str(path))


def test_the_example_config_spells_out_the_defaults_and_its_policy_loads() -> None:
    path = EXAMPLES / "scheduler-config.yaml"
    config = load_config(path)
    assert config.policy_file == (EXAMPLES / "policy-seed-000.json").absolute()
    assert dataclasses.replace(config, policy_file=None, source=None) == SchedulerConfig()
    assert load_resolved_policy(config.policy_file).priority_weights[0] == (
        "LeastRequestedPriority",
        1,
    )


# --------------------------------------------------------------------------- accepted


@dataclass(frozen=True)
class Accepted:
    name: str
    raw: dict[str, Any]
    want: dict[str, Any] = field(default_factory=dict)  # SchedulerConfig fields
    podium: dict[str, Any] = field(default_factory=dict)  # PodiumSettings fields
    warnings: tuple[str, ...] = ()


ACCEPTED = [
    Accepted("no apiVersion or kind", {}),
    Accepted("v1alpha1", dict(V1ALPHA1)),
    Accepted(
        "componentconfig/v1alpha1 (the pre-1.12 group)", {"apiVersion": "componentconfig/v1alpha1"}
    ),
    Accepted(
        "every honoured key",
        {
            **V1ALPHA1,
            "schedulerName": "podium",
            "percentageOfNodesToScore": 30,
            "podInitialBackoffSeconds": 2,
            "podMaxBackoffSeconds": 60,
            "hardPodAffinitySymmetricWeight": 0,
            "disablePreemption": True,
            "bindTimeoutSeconds": 0,
            "algorithmSource": {"provider": "DefaultProvider"},
        },
        {
            "scheduler_name": "podium",
            "percentage_of_nodes_to_score": 30,
            "pod_initial_backoff_seconds": 2,
            "pod_max_backoff_seconds": 60,
            "hard_pod_affinity_symmetric_weight": 0,
            "disable_preemption": True,
            "bind_timeout_seconds": 0,
        },
    ),
    Accepted(
        "percentage 100", {"percentageOfNodesToScore": 100}, {"percentage_of_nodes_to_score": 100}
    ),
    Accepted(
        "equal backoffs",
        {"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 5},
        {"pod_initial_backoff_seconds": 5, "pod_max_backoff_seconds": 5},
    ),
    Accepted(
        "absolute policy path",
        {"algorithmSource": {"policy": {"file": {"path": "/etc/podium/policy.json"}}}},
        {"policy_file": Path("/etc/podium/policy.json")},
    ),
    Accepted(
        "relative policy path: relative to the config file",
        {"algorithmSource": {"policy": {"file": {"path": "policies/p.yaml"}}}},
        {"policy_file": Path("/srv/podium/policies/p.yaml")},
    ),
    Accepted(
        "known Kubernetes keys are ignored with a warning",
        {
            "leaderElection": {"leaderElect": True, "lockObjectNamespace": "kube-system"},
            "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"},
            "healthzBindAddress": "0.0.0.0:10251",
            "metricsBindAddress": "0.0.0.0:10251",
            "enableProfiling": True,
            "enableContentionProfiling": False,
        },
        warnings=(
            "leaderElection: a Kubernetes setting Podium does not use (Podium's own is podium.leaderElection (--leader-elect)); ignored",
            "clientConnection: a Kubernetes setting Podium does not use (Podium talks to no API server); ignored",
            "healthzBindAddress: a Kubernetes setting Podium does not use (Podium serves /healthz on podium.metrics); ignored",
            "metricsBindAddress: a Kubernetes setting Podium does not use (Podium serves /metrics on podium.metrics); ignored",
            "enableProfiling: a Kubernetes setting Podium does not use (Podium has no profiling endpoint); ignored",
            "enableContentionProfiling: a Kubernetes setting Podium does not use (Podium has no profiling endpoint); ignored",
        ),
    ),
    Accepted(
        "every podium key",
        {
            "podium": {
                "listen": "[::1]:0",
                "unix": "/run/podium.sock",
                "metrics": None,
                "database": "/var/lib/podium/podium.db",
                "synchronous": "full",
                "randomSeed": 42,
                "assumedPodTTLSeconds": 0,
                "shutdownGracePeriodSeconds": 2.5,
                "logFormat": "json",
                "logLevel": "debug",
                "eventRetentionRevisions": 1000,
                "maxFrameBytes": 1 << 20,
                "tracing": {"endpoint": "http://127.0.0.1:4317", "sampleRatio": 1, "console": True},
            }
        },
        podium={
            "listen": "[::1]:0",
            "unix": "/run/podium.sock",
            "metrics": None,
            "database": "/var/lib/podium/podium.db",
            "synchronous": "full",
            "random_seed": 42,
            "assumed_pod_ttl_seconds": 0,
            "shutdown_grace_period_seconds": 2.5,
            "log_format": "json",
            "log_level": "debug",
            "event_retention_revisions": 1000,
            "max_frame_bytes": 1 << 20,
            "tracing": TracingSettings(
                endpoint="http://127.0.0.1:4317", sample_ratio=1.0, console=True
            ),
        },
    ),
    Accepted(
        "leader election durations as kube-scheduler spells them, or seconds",
        {
            "podium": {
                "store": "etcd://a:2379/p",
                "leaderElection": {
                    "leaderElect": True,
                    "leaseDurationSeconds": "1m30s",
                    "renewDeadlineSeconds": 20,
                    "retryPeriodSeconds": "1500ms",
                },
            }
        },
        podium={
            "store": "etcd://a:2379/p",
            "leader_election": LeaderElectionSettings(
                leader_elect=True,
                lease_duration_seconds=90.0,
                renew_deadline_seconds=20.0,
                retry_period_seconds=1.5,
            ),
        },
    ),
    Accepted(
        "an object limit up to what the etcd members take",
        {
            "podium": {
                "store": "etcd://a:2379/p",
                "maxObjectBytes": 3 << 20,
                "etcd": {"maxRequestBytes": 4 << 20},
            }
        },
        podium={
            "store": "etcd://a:2379/p",
            "max_object_bytes": 3 << 20,
            "etcd": EtcdSettings(max_request_bytes=4 << 20),
        },
    ),
    Accepted(
        "unix only",
        {"podium": {"listen": None, "unix": "./p.sock"}},
        podium={"listen": None, "unix": "./p.sock"},
    ),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=attrgetter("name"))
def test_accepted(case: Accepted) -> None:
    config = decode_config(case.raw, source="/srv/podium/podium.yaml")
    want = dataclasses.replace(
        SchedulerConfig(source="/srv/podium/podium.yaml", warnings=case.warnings),
        podium=PodiumSettings(**case.podium),
        **case.want,
    )
    assert config == want


# --------------------------------------------------------------------------- rejected


@dataclass(frozen=True)
class Rejected:
    name: str
    raw: Any
    problems: list[tuple[str, str]]


def _later_version(version: str) -> str:
    return (
        "apiVersion must be one of kubescheduler.config.k8s.io/v1alpha1, componentconfig/v1alpha1,"
        f" got {version!r}; Podium reads the v1.14 shape (v1alpha1): profiles, plugins and"
        " pluginConfig have no form in it. Write apiVersion: kubescheduler.config.k8s.io/v1alpha1"
        " with schedulerName and percentageOfNodesToScore at the top level, and choose predicates"
        " and priorities with a Policy file (algorithmSource.policy.file.path)"
    )


REJECTED = [
    Rejected(
        "unknown top-level key, with a suggestion",
        {"percentageOfNodesToScor": 30},
        [("percentageOfNodesToScor", "unknown key; did you mean percentageOfNodesToScore?")],
    ),
    Rejected("unknown top-level key", {"profiles": []}, [("profiles", "unknown key")]),
    Rejected(
        "unknown keys everywhere are all reported",
        {
            "schedulername": "x",
            "algorithmSource": {"policy": {"file": {"path": "p.json", "format": "json"}}},
            "podium": {"listne": "127.0.0.1:1", "tracing": {"sampleRate": 1}},
        },
        [
            ("schedulername", "unknown key; did you mean schedulerName?"),
            ("algorithmSource.policy.file.format", "unknown key"),
            ("podium.listne", "unknown key; did you mean listen?"),
            ("podium.tracing.sampleRate", "unknown key; did you mean sampleRatio?"),
        ],
    ),
    Rejected(
        "podium's own Policy key does not belong here",
        {"podium": {"alwaysCheckAllPredicates": True}},
        [("podium.alwaysCheckAllPredicates", "unknown key")],
    ),
    *(
        Rejected(
            f"a later apiVersion ({version}) with profiles is the version message alone",
            {
                "apiVersion": f"kubescheduler.config.k8s.io/{version}",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "default-scheduler"}],
            },
            [("apiVersion", _later_version(f"kubescheduler.config.k8s.io/{version}"))],
        )
        for version in ("v1beta2", "v1beta3", "v1")
    ),
    Rejected(
        "an apiVersion of another group",
        {"apiVersion": "v1"},
        [
            (
                "apiVersion",
                "apiVersion must be one of kubescheduler.config.k8s.io/v1alpha1, "
                "componentconfig/v1alpha1, got 'v1'",
            )
        ],
    ),
    Rejected(
        "kind",
        {"kind": "Policy"},
        [("kind", "kind must be KubeSchedulerConfiguration, got 'Policy'")],
    ),
    Rejected(
        "percentage above 100",
        {"percentageOfNodesToScore": 101},
        [("percentageOfNodesToScore", "percentageOfNodesToScore must be in 0-100, got 101")],
    ),
    Rejected(
        "negative percentage",
        {"percentageOfNodesToScore": -1},
        [("percentageOfNodesToScore", "percentageOfNodesToScore must be in 0-100, got -1")],
    ),
    Rejected(
        "percentage as a string",
        {"percentageOfNodesToScore": "50%"},
        [("percentageOfNodesToScore", "Expected `int`, got `str`")],
    ),
    Rejected(
        "hardPodAffinitySymmetricWeight above 100",
        {"hardPodAffinitySymmetricWeight": 101},
        [
            (
                "hardPodAffinitySymmetricWeight",
                "hardPodAffinitySymmetricWeight must be in 0-100, got 101",
            )
        ],
    ),
    Rejected(
        "backoffs",
        {"podInitialBackoffSeconds": 0, "podMaxBackoffSeconds": -1, "bindTimeoutSeconds": -5},
        [
            ("bindTimeoutSeconds", "bindTimeoutSeconds must be >= 0, got -5"),
            ("podInitialBackoffSeconds", "podInitialBackoffSeconds must be >= 1, got 0"),
            (
                "podMaxBackoffSeconds",
                "podMaxBackoffSeconds (-1) must be >= podInitialBackoffSeconds (0)",
            ),
        ],
    ),
    Rejected(
        "max backoff below initial",
        {"podInitialBackoffSeconds": 20},
        [
            (
                "podMaxBackoffSeconds",
                "podMaxBackoffSeconds (10) must be >= podInitialBackoffSeconds (20)",
            )
        ],
    ),
    Rejected(
        "empty schedulerName",
        {"schedulerName": ""},
        [("schedulerName", "schedulerName must not be empty")],
    ),
    Rejected(
        "policy and provider",
        {
            "algorithmSource": {
                "provider": "DefaultProvider",
                "policy": {"file": {"path": "p.json"}},
            }
        },
        [("algorithmSource", "give algorithmSource.policy or algorithmSource.provider, not both")],
    ),
    Rejected(
        "another provider",
        {"algorithmSource": {"provider": "ClusterAutoscalerProvider"}},
        [
            (
                "algorithmSource.provider",
                "provider 'ClusterAutoscalerProvider' is not supported; Podium has DefaultProvider",
            )
        ],
    ),
    Rejected(
        "policy from a ConfigMap",
        {
            "algorithmSource": {
                "policy": {"configMap": {"namespace": "kube-system", "name": "policy"}}
            }
        },
        [
            (
                "algorithmSource.policy.configMap",
                "a policy from a ConfigMap is not supported (Podium talks to no API server); "
                "use algorithmSource.policy.file.path",
            )
        ],
    ),
    Rejected(
        "policy without a file",
        {"algorithmSource": {"policy": {}}},
        [("algorithmSource.policy", "give algorithmSource.policy.file.path")],
    ),
    Rejected(
        "policy with an empty path",
        {"algorithmSource": {"policy": {"file": {"path": ""}}}},
        [("algorithmSource.policy.file.path", "the policy file path must not be empty")],
    ),
    Rejected(
        "listen without a port",
        {"podium": {"listen": "localhost"}},
        [("podium.listen", "expected host:port, got 'localhost'")],
    ),
    Rejected(
        "listen without a host",
        {"podium": {"listen": ":7070"}},
        [("podium.listen", "expected host:port, got ':7070'")],
    ),
    Rejected(
        "IPv6 without brackets",
        {"podium": {"metrics": "::1:7071"}},
        [("podium.metrics", "an IPv6 host goes in brackets ([::1]:7070), got '::1:7071'")],
    ),
    Rejected(
        "port out of range",
        {"podium": {"listen": "0.0.0.0:70000"}},
        [("podium.listen", "the port must be 0-65535, got '70000'")],
    ),
    Rejected(
        "empty listen",
        {"podium": {"listen": ""}},
        [("podium.listen", "Expected `str` of length >= 1")],
    ),
    Rejected(
        "log level",
        {"podium": {"logLevel": "verbose"}},
        [("podium.logLevel", "Invalid enum value 'verbose'")],
    ),
    Rejected(
        "synchronous",
        {"podium": {"synchronous": "off"}},
        [("podium.synchronous", "Invalid enum value 'off'")],
    ),
    Rejected(
        "sample ratio above 1",
        {"podium": {"tracing": {"sampleRatio": 1.5}}},
        [("podium.tracing.sampleRatio", "Expected `float` <= 1.0")],
    ),
    Rejected(
        "negative TTL",
        {"podium": {"assumedPodTTLSeconds": -1}},
        [("podium.assumedPodTTLSeconds", "Expected `float` >= 0.0")],
    ),
    Rejected(
        "seed as a string",
        {"podium": {"randomSeed": "42"}},
        [("podium.randomSeed", "Expected `int | null`, got `str`")],
    ),
    Rejected(
        "podium not a mapping",
        {"podium": ["listen"]},
        [("podium", "Expected `object`, got `array`")],
    ),
    Rejected("document not a mapping", ["podium"], [("", "expected a mapping, got list")]),
    Rejected(
        "a store URL of another scheme",
        {"podium": {"store": "redis://h:1/p"}},
        [("podium.store", "Expected `str` matching regex '^(sqlite|etcd)://.'")],
    ),
    Rejected(
        "an etcd client certificate without its key",
        {"podium": {"etcd": {"certFile": "client.pem"}}},
        [("podium.etcd.certFile", "give podium.etcd.certFile and keyFile together")],
    ),
    Rejected(
        "an etcd user without a password file",
        {"podium": {"etcd": {"user": "podium"}}},
        [("podium.etcd.user", "give podium.etcd.user and passwordFile together")],
    ),
    Rejected(
        "leader election on a SQLite store",
        {"podium": {"leaderElection": {"leaderElect": True}}},
        [
            (
                "podium.leaderElection.leaderElect",
                "leader election needs an etcd store (podium.store: etcd://...)",
            )
        ],
    ),
    Rejected(
        "a renew deadline past the lease (kube-scheduler's rule)",
        {
            "podium": {
                "store": "etcd://a:2379/p",
                "leaderElection": {
                    "leaderElect": True,
                    "leaseDurationSeconds": 5,
                    "renewDeadlineSeconds": 5,
                },
            }
        },
        [
            (
                "podium.leaderElection.renewDeadlineSeconds",
                "the renew deadline must be shorter than the lease duration",
            )
        ],
    ),
    Rejected(
        "a retry period past the renew deadline",
        {
            "podium": {
                "store": "etcd://a:2379/p",
                "leaderElection": {"leaderElect": True, "retryPeriodSeconds": 10},
            }
        },
        [
            (
                "podium.leaderElection.retryPeriodSeconds",
                "the retry period must be shorter than the renew deadline",
            )
        ],
    ),
    Rejected(
        "a leader election duration that is not one",
        {"podium": {"leaderElection": {"leaseDurationSeconds": "15x", "retryPeriodSeconds": "2"}}},
        [
            (
                "podium.leaderElection.leaseDurationSeconds",
                "expected a duration such as 15s, 1m30s or 500ms, or seconds, got '15x' "
                '(time: unknown unit "x" in duration "15x")',
            )
        ],
    ),
    Rejected(
        "a leader election duration below the lease's floor",
        {"podium": {"leaderElection": {"leaseDurationSeconds": "500ms"}}},
        [("podium.leaderElection.leaseDurationSeconds", "Expected `float` >= 1.0")],
    ),
    Rejected(
        "an object limit over etcd's request limit",
        {"podium": {"store": "etcd://a:2379/p", "maxObjectBytes": 2_000_000}},
        [
            (
                "podium.maxObjectBytes",
                "podium.maxObjectBytes (2000000) is more than the store can hold: at most "
                "1572864, podium.etcd.maxRequestBytes (etcd's --max-request-bytes)",
            )
        ],
    ),
    Rejected(
        "an object limit over SQLite's largest blob",
        {"podium": {"maxObjectBytes": 2_000_000_000}},
        [
            (
                "podium.maxObjectBytes",
                "podium.maxObjectBytes (2000000000) is more than the store can hold: at most "
                "1000000000, SQLite's largest blob",
            )
        ],
    ),
    Rejected(
        "an object limit below a kilobyte",
        {"podium": {"maxObjectBytes": 100}},
        [("podium.maxObjectBytes", "Expected `int` >= 1024")],
    ),
    Rejected(
        "an unknown etcd key",
        {"podium": {"etcd": {"endpoints": ["a:2379"]}}},
        [("podium.etcd.endpoints", "unknown key")],
    ),
]


def test_the_etcd_files_are_relative_to_the_config_file() -> None:
    config = decode_config(
        {
            "podium": {
                "store": "etcd://10.0.0.1:2379,10.0.0.2:2379/podium",
                "etcd": {
                    "caFile": "etcd/ca.pem",
                    "certFile": "/etc/etcd/client.pem",
                    "keyFile": "client-key.pem",
                    "user": "podium",
                    "passwordFile": "etcd-password",
                    "unavailableSeconds": 30,
                },
            }
        },
        source="/srv/podium/podium.yaml",
    )
    etcd = config.podium.etcd
    assert config.podium.store == "etcd://10.0.0.1:2379,10.0.0.2:2379/podium"
    assert (etcd.ca_file, etcd.cert_file, etcd.key_file, etcd.password_file) == (
        "/srv/podium/etcd/ca.pem",
        "/etc/etcd/client.pem",
        "/srv/podium/client-key.pem",
        "/srv/podium/etcd-password",
    )
    assert (etcd.user, etcd.request_timeout_seconds, etcd.unavailable_seconds) == (
        "podium",
        5.0,
        30.0,
    )


@pytest.mark.parametrize("case", REJECTED, ids=attrgetter("name"))
def test_rejected(case: Rejected) -> None:
    with pytest.raises(ConfigError) as caught:
        decode_config(case.raw, source="podium.yaml")
    assert list(caught.value.problems) == case.problems
    assert caught.value.path == case.problems[0][0]


# --------------------------------------------------------------------------- files


def test_error_text_names_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "podium.yaml"
    path.write_text("podium:\n  listne: 127.0.0.1:7070\n")
    with pytest.raises(ConfigError) as one:
        load_config(path)
    assert str(one.value) == f"{path}: podium.listne: unknown key; did you mean listen?"
    path.write_text("percentageOfNodesToScore: 300\npodium: {logFormat: xml, listen: x}\n")
    with pytest.raises(ConfigError) as type_error:
        load_config(path)
    # msgspec stops at the first wrong type; rule checks run once the types are right
    assert str(type_error.value) == f"{path}: podium.logFormat: Invalid enum value 'xml'"
    path.write_text("percentageOfNodesToScore: 300\npodium: {listen: x}\n")
    with pytest.raises(ConfigError) as two:
        load_config(path)
    assert str(two.value) == (
        f"{path}: 2 problems in this config:\n"
        "  percentageOfNodesToScore: percentageOfNodesToScore must be in 0-100, got 300\n"
        "  podium.listen: expected host:port, got 'x'"
    )


@dataclass(frozen=True)
class File:
    name: str
    text: str
    error: str | None = None
    suffix: str = ".yaml"


FILES = [
    File("YAML", "schedulerName: podium\n"),
    File("JSON", '{"schedulerName": "podium"}', suffix=".json"),
    File(
        "not YAML",
        "schedulerName: [\n",
        error="not valid YAML: while parsing a flow node, did not find expected node content (line 2, column 1)",
    ),
    File(
        "two documents",
        "schedulerName: a\n---\nschedulerName: b\n",
        error="expected one document, found 2",
    ),
]


@pytest.mark.parametrize("case", FILES, ids=attrgetter("name"))
def test_files(case: File, tmp_path: Path) -> None:
    path = tmp_path / f"podium{case.suffix}"
    path.write_text(case.text)
    if case.error is None:
        assert load_config(path).scheduler_name == "podium"
        assert load_config(text=case.text.encode()).scheduler_name == "podium"
        return
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: {case.error}"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.yaml")
    assert str(caught.value) == f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory"


def test_text_without_a_path_keeps_a_relative_policy_path() -> None:
    config = load_config(text="algorithmSource: {policy: {file: {path: p.json}}}")
    assert config.policy_file == Path("p.json")
    assert config.source is None


def test_flags_override_the_file() -> None:
    config = load_config(text="podium: {listen: '127.0.0.1:1', logLevel: warning}")
    podium = msgspec.structs.replace(config.podium, listen="127.0.0.1:2")
    flagged = dataclasses.replace(config, podium=podium)
    assert (flagged.podium.listen, flagged.podium.log_level) == ("127.0.0.1:2", "warning")
