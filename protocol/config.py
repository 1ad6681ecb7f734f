"""Podium's configuration file: a KubeSchedulerConfiguration plus Podium's own ``podium:`` keys.

Kubernetes counterpart: ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1alpha1``,
staging/src/k8s.io/kube-scheduler/config/v1alpha1/types.go) and its validation
(pkg/scheduler/apis/config/validation). Example::

    apiVersion: kubescheduler.config.k8s.io/v1alpha1
    kind: KubeSchedulerConfiguration
    schedulerName: default-scheduler
    percentageOfNodesToScore: 0          # 0-100; 0 = adaptive (50 - nodes/125, floor 5)
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 10
    algorithmSource:
      policy:
        file:
          path: policy.json              # relative to this file
    podium:
      listen: 127.0.0.1:7070
      database: ./podium.db
      tracing: {endpoint: http://localhost:4317, sampleRatio: 0.1}

Keys, top level:

- honoured: ``schedulerName``, ``percentageOfNodesToScore``, ``podInitialBackoffSeconds``,
  ``podMaxBackoffSeconds``, ``algorithmSource`` (``policy.file.path`` or
  ``provider: DefaultProvider``), ``hardPodAffinitySymmetricWeight``, ``disablePreemption``,
  ``bindTimeoutSeconds``;
- accepted with a warning (Kubernetes keys Podium has no use for): see :data:`IGNORED_KEYS`;
- anything else: a :class:`~podium.protocol.errors.ConfigError` naming the key path.

``podium:`` holds Podium's own keys (:class:`PodiumSettings`); unknown keys there are errors too.
Every key has a default, so ``load_config(None)`` is a working configuration. Precedence is
flag > file > default: the CLI applies its flags with :func:`dataclasses.replace` /
:func:`msgspec.structs.replace` on what this module returns.
"""

from __future__ import annotations

import dataclasses
import difflib
import hmac
import os
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from podium.protocol.duration import parse_seconds
from podium.protocol.errors import ConfigError, Problem, split_validation_message
from podium.protocol.extender import ExtenderConfig, check_extenders, fold_extender_configs
from podium.protocol.loader import Format, read_settings

__all__ = [
    "API_VERSIONS",
    "DEFAULT_BATCH_MAX_PODS",
    "DEFAULT_BATCH_MAX_SECONDS",
    "DEFAULT_MAX_OBJECT_BYTES",
    "DURATION_KEYS",
    "ETCD_MAX_REQUEST_BYTES",
    "HONOURED_KEYS",
    "IGNORED_KEYS",
    "KIND",
    "MIN_TOKEN_CHARS",
    "READ_ONLY_REQUESTS",
    "SQLITE_MAX_OBJECT_BYTES",
    "TOKEN_ROLES",
    "AccessToken",
    "AlgorithmSource",
    "EtcdSettings",
    "LeaderElectionSettings",
    "PodiumSettings",
    "PolicyFileSource",
    "PolicySource",
    "SchedulerConfig",
    "TokenRole",
    "TracingSettings",
    "authenticate",
    "decode_config",
    "leader_election_problems",
    "load_config",
    "load_token_file",
    "object_limit_problems",
    "parse_token_file",
]

KIND = "KubeSchedulerConfiguration"
API_VERSIONS = ("kubescheduler.config.k8s.io/v1alpha1", "componentconfig/v1alpha1")
"""The KubeSchedulerConfiguration versions whose shape this module reads (1.14 and before)."""
DEFAULT_PROVIDER = "DefaultProvider"
_LATER_VERSION_PREFIX = "kubescheduler.config.k8s.io/"
"""v1alpha2 (1.18), v1beta1-3 and v1 (1.25+): the profiles shape, which Podium does not read."""

HONOURED_KEYS = (
    "schedulerName",
    "algorithmSource",
    "hardPodAffinitySymmetricWeight",
    "disablePreemption",
    "percentageOfNodesToScore",
    "bindTimeoutSeconds",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "extenders",
)
IGNORED_KEYS: dict[str, str] = {
    "leaderElection": "Podium's own is podium.leaderElection (--leader-elect)",
    "clientConnection": "Podium talks to no API server",
    "healthzBindAddress": "Podium serves /healthz on podium.metrics",
    "metricsBindAddress": "Podium serves /metrics on podium.metrics",
    "enableProfiling": "Podium has no profiling endpoint",
    "enableContentionProfiling": "Podium has no profiling endpoint",
    "failureDomains": "Podium reads zones from node labels",
    "plugins": "Podium's plugins are chosen by the policy",
    "pluginConfig": "Podium's plugin arguments come from the policy",
    "topologySpreadConstraints": "cluster-level spreading defaults are not supported",
}
"""Kubernetes keys Podium accepts and ignores, with the reason given in the warning."""


class _ConfigStruct(
    msgspec.Struct, rename="camel", frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Base of the config structs: camelCase keys, unknown keys rejected."""


# --------------------------------------------------------------------------- podium:


Address = Annotated[str, msgspec.Meta(min_length=1)]
FilePath = Annotated[str, msgspec.Meta(min_length=1)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]


class TracingSettings(_ConfigStruct, frozen=True, kw_only=True):
    """``podium.tracing``: OpenTelemetry.

    Attributes:
        endpoint: the OTLP (gRPC) endpoint; ``None`` (default) exports nothing.
        sample_ratio: the fraction of scheduling attempts traced (0-1, default 0.1: a sampled
            span costs 25-60 us, STYLE.md).
        console: also print finished spans to stderr (debugging).
    """

    endpoint: str | None = None
    sample_ratio: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.1
    console: bool = False


DEFAULT_BATCH_MAX_PODS = 32
"""Pods per scheduling batch unless configured (``podium.batchMaxPods``)."""

DEFAULT_BATCH_MAX_SECONDS = 0.02
"""A scheduling batch's time bound unless configured (``podium.batchMaxSeconds``)."""


ETCD_MAX_REQUEST_BYTES = 1_572_864
"""etcd's default ``--max-request-bytes`` (1.5 MiB): ``podium.etcd.maxRequestBytes``."""

DEFAULT_MAX_OBJECT_BYTES = ETCD_MAX_REQUEST_BYTES
"""``podium.maxObjectBytes`` unless configured: etcd's default request limit, for every store
(Kubernetes' API server refuses a request body over 3 MiB, its etcd one over 1.5 MiB)."""

SQLITE_MAX_OBJECT_BYTES = 1_000_000_000
"""The largest object the SQLite store can hold: SQLite's default ``SQLITE_MAX_LENGTH`` for a
blob."""


class EtcdSettings(_ConfigStruct, frozen=True, kw_only=True):
    """``podium.etcd``: how to reach etcd when ``podium.store`` is ``etcd://...``.

    Attributes:
        ca_file: the PEM CA bundle of the members' certificates: the client speaks TLS.
            Relative to the config file.
        cert_file: a client certificate (PEM), for etcd's ``--client-cert-auth``; needs
            ``key_file`` and ``ca_file``.
        key_file: its private key.
        user: an etcd user (etcd's auth enabled); needs ``password_file``.
        password_file: a file whose first line is the user's password (never the password
            itself in the configuration). Relative to the config file.
        request_timeout_seconds: how long one request to one member may take.
        unavailable_seconds: how long a request goes on trying the members before it
            counts as ``etcd is unavailable`` (the daemon then stops: fail-stop).
        compaction_interval_seconds: how often Podium compacts etcd's history, up to the
            revision of the previous round (0: never, leave it to etcd's auto-compaction).
        max_request_bytes: the members' ``--max-request-bytes`` (etcd's default, 1.5 MiB):
            Podium's transactions stay below it, and ``podium.maxObjectBytes`` may not be
            larger.
    """

    ca_file: FilePath | None = None
    cert_file: FilePath | None = None
    key_file: FilePath | None = None
    user: str | None = None
    password_file: FilePath | None = None
    request_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 5.0
    unavailable_seconds: Annotated[float, msgspec.Meta(gt=0)] = 10.0
    compaction_interval_seconds: Annotated[float, msgspec.Meta(ge=0)] = 300.0
    max_request_bytes: Annotated[int, msgspec.Meta(ge=64 * 1024)] = ETCD_MAX_REQUEST_BYTES


class LeaderElectionSettings(_ConfigStruct, frozen=True, kw_only=True):
    """``podium.leaderElection``: several replicas on one etcd store, one of them leading.

    Kubernetes' leader election flags and defaults (``--leader-elect`` and its
    ``LeaderElectionConfiguration``): the leader holds an etcd lease of ``lease_duration``
    seconds, renews it every ``retry_period`` and gives up (exits) when no renewal has
    succeeded for ``renew_deadline``; a follower tries to take the lead every
    ``retry_period``.

    Attributes:
        leader_elect: run as one of several replicas (needs an ``etcd://`` store).
        lease_duration_seconds: the lease's TTL: how long after the leader's last renewal a
            follower may take over (etcd rounds it up to whole seconds).
        renew_deadline_seconds: how long the leader goes on trying to renew before it gives
            up leading (below ``lease_duration_seconds``).
        retry_period_seconds: how often the leader renews and followers try to lead.
            These three keys take seconds or a duration string (``15s``, ``1m30s``:
            :data:`DURATION_KEYS`).
        identity: this replica's name in the leadership key (default ``HOST:PID``).
        advertise: the protocol address clients are sent to when this replica leads
            (default: the TCP address it listens on).
    """

    leader_elect: bool = False
    lease_duration_seconds: Annotated[float, msgspec.Meta(ge=1)] = 15.0
    renew_deadline_seconds: Annotated[float, msgspec.Meta(gt=0)] = 10.0
    retry_period_seconds: Annotated[float, msgspec.Meta(gt=0)] = 2.0
    identity: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    advertise: Address | None = None


class PodiumSettings(_ConfigStruct, frozen=True, kw_only=True):
    """``podium:``: Podium's own keys.

    Attributes:
        listen: TCP ``host:port`` of the protocol (``None`` disables TCP; port 0 picks one).
        unix: a Unix socket path for the protocol, or ``None``.
        metrics: ``host:port`` of the HTTP server (``/metrics``, ``/healthz``, ``/readyz``,
            ``/livez``), or ``None`` to serve none.
        database: the SQLite file (relative to the working directory), when ``store`` is
            unset.
        store: where the store lives: ``sqlite://PATH`` (the spelled-out form of
            ``database``) or ``etcd://HOST:PORT[,HOST:PORT...]/PREFIX`` (etcd 3.5 or later,
            reached through its HTTP/JSON gateway; see ``etcd``).
        etcd: TLS, user and timeouts toward etcd.
        leader_election: replicas and leader election (etcd stores only).
        synchronous: SQLite ``synchronous``: ``normal`` survives ``kill -9``, ``full`` also
            survives power loss.
        random_seed: seeds tie-breaks so runs repeat; ``None`` for a random seed.
        assumed_pod_ttl_seconds: how long an assumed pod waits for its binding to confirm
            (0 = forever).
        batch_max_pods: the most pods one scheduling batch takes from the queue (1: one pod
            at a time).
        batch_max_seconds: a batch's time bound: pods it has not decided by then go back to
            the queue where they were, so a higher-priority pod that arrives during a batch
            waits at most this long.
        shutdown_grace_period_seconds: how long SIGTERM waits for work to drain.
        log_format: ``text`` or ``json``.
        log_level: ``debug``, ``info``, ``warning`` or ``error``.
        event_retention_revisions: how many revisions the event log keeps.
        max_frame_bytes: the largest protocol frame accepted (both ways: a larger reply is
            answered ``too_large``).
        max_object_bytes: the largest object a put may store, in the store's encoding
            (msgpack); one larger is refused at the gateway with ``too_large`` (``Request
            entity too large: limit is N``, Kubernetes' words) and its path. At most what the
            store can hold: ``etcd.maxRequestBytes`` for etcd, SQLite's blob limit
            (:data:`SQLITE_MAX_OBJECT_BYTES`) for SQLite.
        max_connections: protocol connections open at once; one more is answered
            ``unavailable`` (``connection limit N reached``) and closed.
        max_in_flight_per_connection: requests (watches aside) one connection may have in
            progress; the daemon reads no further request from it until one finishes. The
            connection's outgoing queue holds four times as many frames.
        max_watchers: watches open at once, over every connection; one more is answered
            ``overloaded`` (``watcher limit N reached``).
        watch_buffer: events a watch may have waiting for its client; a watch that falls
            further behind is cut off with ``overloaded`` and the revision to resume from (a
            single commit larger than this is still handed whole to a watch that is keeping up).
        max_outbox_bytes: bytes of replies and events one connection may have waiting to be
            written; past them its requests and watches wait, and no further request is read
            from it (a client that does not read stalls only itself).
        max_buffered_bytes: the same, over every connection together.
        handshake_timeout_seconds: how long a new connection is given to send its hello.
        max_handshakes: connections accepted that have not yet sent their hello; one more
            closes the oldest of them, so silent sockets cannot hold every connection slot.
        token_file: the access tokens (see :func:`parse_token_file`); when set, every TCP
            connection must present one of them in its hello. Required to listen beyond
            loopback. Relative to the config file.
        tls_cert: a PEM certificate chain: the TCP listener speaks TLS. Relative to the config
            file; needs ``tls_key``.
        tls_key: the PEM private key of ``tls_cert``.
        insecure_plaintext: allow listening beyond loopback without TLS (tokens then cross the
            network in plain text).
        unix_mode: the file mode of the Unix socket (octal, default ``0600``: only the daemon's
            user may connect). The Unix socket asks for no token.
        insecure_metrics: allow serving ``metrics`` (``/metrics`` and the health endpoints,
            which ask for no token and speak no TLS) beyond loopback.
        tracing: OpenTelemetry settings.
    """

    listen: Address | None = "127.0.0.1:7070"
    unix: Address | None = None
    metrics: Address | None = "127.0.0.1:7071"
    database: Annotated[str, msgspec.Meta(min_length=1)] = "./podium.db"
    store: Annotated[str, msgspec.Meta(pattern="^(sqlite|etcd)://.")] | None = None
    etcd: EtcdSettings = EtcdSettings()
    leader_election: LeaderElectionSettings = LeaderElectionSettings()
    synchronous: Literal["normal", "full"] = "normal"
    random_seed: int | None = None
    assumed_pod_ttl_seconds: Seconds = msgspec.field(default=30.0, name="assumedPodTTLSeconds")
    batch_max_pods: Annotated[int, msgspec.Meta(ge=1, le=4096)] = DEFAULT_BATCH_MAX_PODS
    batch_max_seconds: Annotated[float, msgspec.Meta(gt=0)] = DEFAULT_BATCH_MAX_SECONDS
    shutdown_grace_period_seconds: Seconds = 10.0
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    event_retention_revisions: Annotated[int, msgspec.Meta(ge=1)] = 1_000_000
    max_frame_bytes: Annotated[int, msgspec.Meta(ge=1024, le=2**32 - 1)] = 16 * 1024 * 1024
    max_object_bytes: Annotated[int, msgspec.Meta(ge=1024)] = DEFAULT_MAX_OBJECT_BYTES
    max_connections: Annotated[int, msgspec.Meta(ge=1)] = 1024
    max_in_flight_per_connection: Annotated[int, msgspec.Meta(ge=1)] = 256
    max_watchers: Annotated[int, msgspec.Meta(ge=1)] = 1024
    watch_buffer: Annotated[int, msgspec.Meta(ge=1)] = 4096
    max_outbox_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 4 * 1024 * 1024
    max_buffered_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 64 * 1024 * 1024
    handshake_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 2.0
    max_handshakes: Annotated[int, msgspec.Meta(ge=1)] = 64
    token_file: FilePath | None = None
    tls_cert: FilePath | None = None
    tls_key: FilePath | None = None
    insecure_plaintext: bool = False
    unix_mode: Annotated[str, msgspec.Meta(pattern="^0?[0-7]{3}$")] = "0600"
    insecure_metrics: bool = False
    tracing: TracingSettings = TracingSettings()


# --------------------------------------------------------------------------- access tokens


TokenRole = Literal["read-only", "read-write"]
TOKEN_ROLES: tuple[TokenRole, ...] = ("read-only", "read-write")
MIN_TOKEN_CHARS = 16
"""The shortest token accepted: a token is a password, guessing must be hopeless
(``openssl rand -hex 32`` makes a good one)."""
READ_ONLY_REQUESTS = ("get", "watch", "cancel", "explain", "simulate", "stats")
"""The requests a read-only token may make (by wire tag); put, delete and reload_policy need
a read-write token."""


@dataclasses.dataclass(frozen=True, slots=True)
class AccessToken:
    """One line of a token file.

    Attributes:
        token: the secret (never printed: ``repr`` leaves it out).
        role: ``read-only`` (get, watch, cancel, explain, simulate, stats) or ``read-write``
            (everything).
        name: who holds it, for logs and errors (default ``line N``).
        line: its line in the file (1-based).
    """

    token: str = dataclasses.field(repr=False)
    role: TokenRole
    name: str
    line: int

    @property
    def read_only(self) -> bool:
        return self.role == "read-only"


def parse_token_file(text: str, *, source: str | None = None) -> tuple[AccessToken, ...]:
    """Read a token file: one token per line, ``TOKEN ROLE [NAME]``::

        # podium tokens: TOKEN ROLE [NAME]; ROLE is read-only or read-write
        3f0c9a...e1   read-write  ci-deployer
        77b2d4...0a   read-only   dashboard

    Fields are separated by whitespace; blank lines and lines starting with ``#`` are
    skipped. A token is at least :data:`MIN_TOKEN_CHARS` printable ASCII characters without
    spaces; ``NAME`` (one word, default ``line N``) names the holder in logs and errors.

    Raises:
        ConfigError: every bad line, each naming its line number (``line 3: ...``); never
            the token itself. A file without any token is an error too (no client could
            connect).
    """
    tokens: list[AccessToken] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    names: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"line {number}"
        fields = line.split()
        if len(fields) not in (2, 3):
            problems.append(
                (
                    where,
                    f"expected TOKEN ROLE [NAME] (ROLE: read-only or read-write), got {len(fields)} fields",
                )
            )
            continue
        token, role = fields[0], fields[1]
        name = fields[2] if len(fields) == 3 else where
        if role not in TOKEN_ROLES:
            problems.append((where, _bad_role(fields)))
            continue
        if not (token.isascii() and token.isprintable()):
            problems.append((where, "a token must be printable ASCII"))
            continue
        if len(token) < MIN_TOKEN_CHARS:
            problems.append(
                (
                    where,
                    f"the token is {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
                    "(e.g. `openssl rand -hex 32`)",
                )
            )
            continue
        if token in seen:
            problems.append((where, f"the same token as line {seen[token]}"))
            continue
        if name in names:
            problems.append((where, f"the name {name!r} is already used on line {names[name]}"))
            continue
        seen[token] = names[name] = number
        tokens.append(AccessToken(token=token, role=role, name=name, line=number))
    if problems:
        raise ConfigError(problems, source=source)
    if not tokens:
        raise ConfigError(
            [("", "no tokens: every line is blank or a comment, so no client could connect")],
            source=source,
        )
    return tuple(tokens)


def _bad_role(fields: Sequence[str]) -> str:
    """The problem of a line whose second field is not a role, without any field's value: a
    field out of place may be the token (Kubernetes' tokenfile authenticator, likewise, names
    the record and never its text: staging/src/k8s.io/apiserver/pkg/authentication/token/
    tokenfile/tokenfile.go@v1.14.0)."""
    hidden = "(the values are not shown: one of them may be a token)"
    if fields[0] in TOKEN_ROLES:
        return f"the role is in column 1: the columns look swapped, expected TOKEN ROLE [NAME] {hidden}"
    if fields[-1] in TOKEN_ROLES:
        return f"the role is in column 3: expected TOKEN ROLE [NAME] {hidden}"
    return (
        "column 2 must be the role, read-only or read-write "
        "(its value is not shown: it may be a token)"
    )


def load_token_file(path: str | os.PathLike[str]) -> tuple[AccessToken, ...]:
    """Read and parse the token file at ``path`` (see :func:`parse_token_file`).

    Raises:
        ConfigError: the file cannot be read, is not UTF-8, or has a bad line.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError([("", f"cannot read: {exc.strerror or exc}")], source=source) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([("", f"not UTF-8: {exc.reason}")], source=source) from None
    return parse_token_file(text, source=source)


def authenticate(tokens: Sequence[AccessToken], presented: str | None) -> AccessToken | None:
    """The entry whose token is ``presented``, or None.

    Every entry is compared, each with :func:`hmac.compare_digest`, so the time taken says
    nothing about which entry (or how much of one) matched.
    """
    given = (presented or "").encode("utf-8", "surrogatepass")
    found: AccessToken | None = None
    for entry in tokens:
        if hmac.compare_digest(entry.token.encode("ascii"), given):
            found = entry
    return found


# --------------------------------------------------------------------------- kube keys


class PolicyFileSource(_ConfigStruct, frozen=True, kw_only=True):
    path: str = ""


class PolicyConfigMapSource(_ConfigStruct, frozen=True, kw_only=True):
    namespace: str = ""
    name: str = ""


class PolicySource(_ConfigStruct, frozen=True, kw_only=True):
    file: PolicyFileSource | None = None
    config_map: PolicyConfigMapSource | None = None


class AlgorithmSource(_ConfigStruct, frozen=True, kw_only=True):
    policy: PolicySource | None = None
    provider: str | None = None


class _KubeSchedulerConfiguration(_ConfigStruct, frozen=True, kw_only=True):
    api_version: str = API_VERSIONS[0]
    kind: str = KIND
    scheduler_name: str = "default-scheduler"
    algorithm_source: AlgorithmSource = AlgorithmSource()
    hard_pod_affinity_symmetric_weight: int = 10
    disable_preemption: bool = False
    percentage_of_nodes_to_score: int = 0
    bind_timeout_seconds: int = 600
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    extenders: list[ExtenderConfig] = []
    podium: PodiumSettings = PodiumSettings()


@dataclasses.dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """The configuration Podium runs with.

    Attributes:
        scheduler_name: pods whose ``spec.schedulerName`` matches are scheduled.
        percentage_of_nodes_to_score: 0-100; 0 = adaptive (``50 - nodes/125``, floor 5).
        pod_initial_backoff_seconds: the first backoff of a failed pod.
        pod_max_backoff_seconds: the longest backoff.
        policy_file: the policy file (made absolute against the config file's folder), or
            ``None`` for the default policy.
        hard_pod_affinity_symmetric_weight: 0-100; a policy's non-zero value overrides it.
        disable_preemption: preemption is later work; kept for when it lands.
        bind_timeout_seconds: how long a bind may take before it counts as failed.
        extenders: scheduler extenders (the shape of a Policy's ``extenders``, as later
            KubeSchedulerConfiguration versions carry them); they run after the policy's.
        podium: Podium's own keys.
        source: the config file, or ``None`` for the defaults.
        warnings: the ignored Kubernetes keys, one message each.
    """

    scheduler_name: str = "default-scheduler"
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    policy_file: Path | None = None
    hard_pod_affinity_symmetric_weight: int = 10
    disable_preemption: bool = False
    bind_timeout_seconds: int = 600
    extenders: tuple[ExtenderConfig, ...] = ()
    podium: PodiumSettings = dataclasses.field(default_factory=PodiumSettings)
    source: str | None = None
    warnings: tuple[str, ...] = ()


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    text: str | bytes | None = None,
    fmt: Format | None = None,
) -> SchedulerConfig:
    """Read the configuration file at ``path`` (or ``text``); ``None`` gives the defaults.

    Args:
        path: the config file (YAML or JSON); also names it in errors and anchors a relative
            policy path.
        text: the content, when already read (``path`` then only names it).
        fmt: ``"json"``, ``"yaml"`` or ``None`` to guess.

    Raises:
        ConfigError: the file cannot be read or parsed, or breaks a rule (every problem found
            is listed; the first names its key path, e.g. ``podium.tracing.sampleRatio``).
    """
    if path is None and text is None:
        return SchedulerConfig()
    source = os.fspath(path) if path is not None else "<config>"
    raw = read_settings(text, source=source, fmt=fmt, error=ConfigError)
    return decode_config(raw, source=source if path is not None else None)


def decode_config(raw: Any, *, source: str | None = None) -> SchedulerConfig:
    """Check a parsed configuration document and build the :class:`SchedulerConfig`.

    Args:
        raw: the parsed document (a mapping); ``None`` (an empty file) gives the defaults.
        source: the config file: names it in errors, anchors a relative policy path.

    Raises:
        ConfigError: as :func:`load_config`.
    """
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ConfigError([("", f"expected a mapping, got {type(raw).__name__}")], source=source)
    version = raw.get("apiVersion", API_VERSIONS[0])
    if version not in API_VERSIONS:
        # A later version's keys (profiles, plugins, ...) would each be "unknown key": the
        # version is the one problem to report, with what to write instead.
        raise ConfigError([("apiVersion", _version_message(version))], source=source)
    problems: list[Problem] = []
    warnings: list[str] = []
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        if key in IGNORED_KEYS:
            warnings.append(
                f"{key}: a Kubernetes setting Podium does not use ({IGNORED_KEYS[key]}); ignored"
            )
        elif key in HONOURED_KEYS or key in ("apiVersion", "kind", "podium"):
            kept[key] = value
        else:
            problems.append(
                (str(key), _unknown_key(key, [*HONOURED_KEYS, *IGNORED_KEYS, "podium"]))
            )
    kept = fold_extender_configs(kept)
    kept = _read_durations(kept, problems)
    problems.extend(_unknown_keys(kept, _KubeSchedulerConfiguration, "", top=True))
    if problems:
        raise ConfigError(problems, source=source)
    try:
        config = msgspec.convert(kept, type=_KubeSchedulerConfiguration)
    except msgspec.ValidationError as exc:
        reason, at = split_validation_message(str(exc))
        path = (at or "$").removeprefix("$").removeprefix(".")
        raise ConfigError([(path, reason)], source=source) from None
    problems = _check(config)
    if problems:
        raise ConfigError(problems, source=source)
    return SchedulerConfig(
        scheduler_name=config.scheduler_name,
        percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        pod_initial_backoff_seconds=config.pod_initial_backoff_seconds,
        pod_max_backoff_seconds=config.pod_max_backoff_seconds,
        policy_file=_policy_file(config.algorithm_source, source),
        hard_pod_affinity_symmetric_weight=config.hard_pod_affinity_symmetric_weight,
        disable_preemption=config.disable_preemption,
        bind_timeout_seconds=config.bind_timeout_seconds,
        extenders=tuple(config.extenders),
        podium=_anchor_files(config.podium, source),
        source=source,
        warnings=tuple(warnings),
    )


DURATION_KEYS = ("leaseDurationSeconds", "renewDeadlineSeconds", "retryPeriodSeconds")
"""The ``podium.leaderElection`` keys that also take a duration string (``15s``, ``1m30s``), as
kube-scheduler's ``--leader-elect-*`` flags and LeaderElectionConfiguration's fields do."""


def _read_durations(kept: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """``kept`` with each duration string of ``podium.leaderElection`` read as seconds (a
    copy; a bad one is a problem naming its key)."""
    podium = kept.get("podium")
    election = podium.get("leaderElection") if isinstance(podium, dict) else None
    if not isinstance(podium, dict) or not isinstance(election, dict):
        return kept
    read = dict(election)
    for key in DURATION_KEYS:
        value = election.get(key)
        if isinstance(value, str):
            try:
                read[key] = parse_seconds(value)
            except ValueError as exc:
                problems.append((f"podium.leaderElection.{key}", str(exc)))
    return {**kept, "podium": {**podium, "leaderElection": read}}


def _anchor_files(podium: PodiumSettings, source: str | None) -> PodiumSettings:
    """The token, certificate and key paths made absolute against the config file's folder
    (as the policy path is); flags, applied later, stay relative to the working directory."""
    if source is None:
        return podium
    changes = _anchored(podium, ("token_file", "tls_cert", "tls_key"), source)
    etcd = _anchored(podium.etcd, ("ca_file", "cert_file", "key_file", "password_file"), source)
    if etcd:
        changes["etcd"] = msgspec.structs.replace(podium.etcd, **etcd)
    return msgspec.structs.replace(podium, **changes) if changes else podium


def _anchored(settings: msgspec.Struct, keys: tuple[str, ...], source: str) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key in keys:
        value: str | None = getattr(settings, key)
        if value is None:
            continue
        path = Path(value).expanduser()
        if not path.is_absolute():
            path = (Path(source).parent / path).absolute()
        if str(path) != value:
            changes[key] = str(path)
    return changes


def _policy_file(algorithm: AlgorithmSource, source: str | None) -> Path | None:
    if algorithm.policy is None or algorithm.policy.file is None:
        return None
    candidate = Path(algorithm.policy.file.path).expanduser()
    if candidate.is_absolute() or source is None:
        return candidate
    return (Path(source).parent / candidate).absolute()


def _version_message(version: object) -> str:
    """The error for a KubeSchedulerConfiguration version Podium does not read."""
    message = f"apiVersion must be one of {', '.join(API_VERSIONS)}, got {version!r}"
    if isinstance(version, str) and version.startswith(_LATER_VERSION_PREFIX):
        message += (
            "; Podium reads the v1.14 shape (v1alpha1): profiles, plugins and pluginConfig have"
            " no form in it. Write apiVersion: kubescheduler.config.k8s.io/v1alpha1 with"
            " schedulerName and percentageOfNodesToScore at the top level, and choose"
            " predicates and priorities with a Policy file (algorithmSource.policy.file.path)"
        )
    return message


def _check(config: _KubeSchedulerConfiguration) -> list[Problem]:
    problems: list[Problem] = []
    if config.kind != KIND:
        problems.append(("kind", f"kind must be {KIND}, got {config.kind!r}"))
    if not config.scheduler_name:
        problems.append(("schedulerName", "schedulerName must not be empty"))
    for key, value in (
        ("percentageOfNodesToScore", config.percentage_of_nodes_to_score),
        ("hardPodAffinitySymmetricWeight", config.hard_pod_affinity_symmetric_weight),
    ):
        if not 0 <= value <= 100:
            problems.append((key, f"{key} must be in 0-100, got {value}"))
    problems.extend(check_extenders(config.extenders))
    if config.bind_timeout_seconds < 0:
        problems.append(
            (
                "bindTimeoutSeconds",
                f"bindTimeoutSeconds must be >= 0, got {config.bind_timeout_seconds}",
            )
        )
    if config.pod_initial_backoff_seconds < 1:
        problems.append(
            (
                "podInitialBackoffSeconds",
                f"podInitialBackoffSeconds must be >= 1, got {config.pod_initial_backoff_seconds}",
            )
        )
    if config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds:
        problems.append(
            (
                "podMaxBackoffSeconds",
                f"podMaxBackoffSeconds ({config.pod_max_backoff_seconds}) must be >= "
                f"podInitialBackoffSeconds ({config.pod_initial_backoff_seconds})",
            )
        )
    algorithm = config.algorithm_source
    if algorithm.policy is not None and algorithm.provider is not None:
        problems.append(
            ("algorithmSource", "give algorithmSource.policy or algorithmSource.provider, not both")
        )
    if algorithm.provider is not None and algorithm.provider != DEFAULT_PROVIDER:
        problems.append(
            (
                "algorithmSource.provider",
                f"provider {algorithm.provider!r} is not supported; Podium has {DEFAULT_PROVIDER}",
            )
        )
    if (policy := algorithm.policy) is not None:
        if policy.config_map is not None:
            problems.append(
                (
                    "algorithmSource.policy.configMap",
                    "a policy from a ConfigMap is not supported (Podium talks to no API server); "
                    "use algorithmSource.policy.file.path",
                )
            )
        elif policy.file is None:
            problems.append(("algorithmSource.policy", "give algorithmSource.policy.file.path"))
        elif not policy.file.path:
            problems.append(
                ("algorithmSource.policy.file.path", "the policy file path must not be empty")
            )
    if (config.podium.tls_cert is None) != (config.podium.tls_key is None):
        present, missing = (
            ("tlsCert", "tlsKey") if config.podium.tls_key is None else ("tlsKey", "tlsCert")
        )
        problems.append(
            (f"podium.{missing}", f"podium.{present} is set without podium.{missing}; give both")
        )
    etcd = config.podium.etcd
    if (etcd.cert_file is None) != (etcd.key_file is None):
        problems.append(("podium.etcd.certFile", "give podium.etcd.certFile and keyFile together"))
    if (etcd.user is None) != (etcd.password_file is None):
        problems.append(("podium.etcd.user", "give podium.etcd.user and passwordFile together"))
    problems.extend(leader_election_problems(config.podium))
    problems.extend(object_limit_problems(config.podium))
    for key, address in (
        ("podium.listen", config.podium.listen),
        ("podium.metrics", config.podium.metrics),
    ):
        if address is not None and (message := _address_problem(address)):
            problems.append((key, message))
    return problems


def _address_problem(address: str) -> str | None:
    """Why ``address`` is not ``host:port`` (IPv6 hosts in brackets), or ``None``."""
    host, sep, port = address.rpartition(":")
    if not sep or not host:
        return f"expected host:port, got {address!r}"
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        return f"an IPv6 host goes in brackets ([::1]:7070), got {address!r}"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        return f"the port must be 0-65535, got {port!r}"
    return None


def _unknown_key(key: object, known: list[str]) -> str:
    message = "unknown key"
    if isinstance(key, str) and (close := difflib.get_close_matches(key, known, n=1)):
        message += f"; did you mean {close[0]}?"
    return message


def _unknown_keys(raw: Any, cls: Any, prefix: str, *, top: bool = False) -> list[Problem]:
    """Every key of ``raw`` the struct ``cls`` (and its nested structs) does not declare."""
    if not isinstance(raw, dict):
        return []  # msgspec reports the wrong type
    fields = {field.encode_name: field.type for field in msgspec.structs.fields(cls)}
    problems: list[Problem] = []
    for key, value in raw.items():
        path = f"{prefix}{key}"
        if key not in fields:
            if not top:  # top-level keys were sorted out by the caller
                problems.append((path, _unknown_key(key, list(fields))))
            continue
        nested = _struct_of(fields[key])
        if nested is not None:
            problems.extend(_unknown_keys(value, nested, f"{path}."))
    return problems


def _struct_of(tp: Any) -> Any:
    """The Struct type in ``tp`` (``X``, ``X | None``), or ``None``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [
            m for m in typing.get_args(tp) if isinstance(m, type) and issubclass(m, msgspec.Struct)
        ]
        return members[0] if members else None
    return tp if isinstance(tp, type) and issubclass(tp, msgspec.Struct) else None


def object_limit_problems(podium: PodiumSettings) -> list[tuple[str, str]]:
    """``podium.maxObjectBytes`` over what the store can hold (checked after the flags too,
    since ``--store`` and ``--db`` choose the store): (key, problem) pairs."""
    limit = podium.max_object_bytes
    if (podium.store or "").startswith("etcd://"):
        most, where = (
            podium.etcd.max_request_bytes,
            "podium.etcd.maxRequestBytes (etcd's --max-request-bytes)",
        )
    else:
        most, where = SQLITE_MAX_OBJECT_BYTES, "SQLite's largest blob"
    if limit <= most:
        return []
    return [
        (
            "podium.maxObjectBytes",
            f"podium.maxObjectBytes ({limit}) is more than the store can hold: at most {most}, "
            f"{where}",
        )
    ]


def leader_election_problems(podium: PodiumSettings) -> list[tuple[str, str]]:
    """What is wrong with ``podium.leaderElection`` (after the flags): (key, problem) pairs."""
    problems: list[tuple[str, str]] = []
    election = podium.leader_election
    if not election.leader_elect:
        return problems
    if not (podium.store or "").startswith("etcd://"):
        problems.append(
            (
                "podium.leaderElection.leaderElect",
                "leader election needs an etcd store (podium.store: etcd://...)",
            )
        )
    if election.renew_deadline_seconds >= election.lease_duration_seconds:
        problems.append(
            (
                "podium.leaderElection.renewDeadlineSeconds",
                "the renew deadline must be shorter than the lease duration",
            )
        )
    if election.retry_period_seconds >= election.renew_deadline_seconds:
        problems.append(
            (
                "podium.leaderElection.retryPeriodSeconds",
                "the retry period must be shorter than the renew deadline",
            )
        )
    return problems
