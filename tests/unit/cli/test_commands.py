"""The daemon-facing subcommands (cli/objects.py, explain.py, stats.py, policy.py,
protocol.py, over common/remote.py and common/output.py), run as ``podium`` runs them, against the fake daemon
of tests/support/fakeserver.py (on its own thread: each command calls ``trio.run``).

Output is compared exactly; AGE is pinned by patching :func:`objects.utc_now`.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from builders import decode, make_node, make_pod, make_pod_group
from fakeserver import FakeServer, Handler, Outgoing, fake_server_thread

from podium.cli import objects
from podium.cli import stats as stats_command
from podium.cli.common.output import human_duration
from podium.cli.explain import explain_target
from podium.cli.main import EXIT_INTERRUPTED, build_parser, main
from podium.cli.objects import resolve_kind, resolve_ref
from podium.protocol import objects as o
from podium.protocol import schema
from podium.protocol.client import DEFAULT_CHUNK_SIZE, Backoff
from podium.protocol.errors import ErrorCode
from podium.protocol.wire import (
    Cancel,
    CancelReply,
    ClientMessage,
    Delete,
    DeleteReply,
    ErrorReply,
    Event,
    Explain,
    ExplainGroupReply,
    ExplainReply,
    Get,
    GetReply,
    GroupPlacement,
    Hint,
    NodeVerdict,
    ObjectError,
    ObjectRef,
    ObjectStatus,
    PendingCounts,
    Placement,
    PriorityWeight,
    Put,
    PutReply,
    ReloadPolicy,
    ReloadPolicyReply,
    Stats,
    StatsReply,
    Watch,
    WatchReply,
)

NOW = datetime(2024, 5, 10, 12, 0, 0, tzinfo=UTC)
THREE_MINUTES_AGO = "2024-05-10T11:57:00Z"
FOUR_DAYS_AGO = "2024-05-06T12:00:00Z"
NOW_ISO = "2024-05-10T12:00:00Z"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "utc_now", lambda: NOW)
    monkeypatch.delenv("PODIUM_SERVER", raising=False)
    monkeypatch.delenv("PODIUM_TOKEN", raising=False)


def podium(*argv: str) -> int:
    """Parse ``argv`` as ``podium`` does and run the command."""
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


@dataclass
class Daemon:
    """A scripted daemon: ``objects`` answer gets; puts and deletes echo their objects."""

    objects: list[o.KubeObject]
    revision: int = 41

    def __call__(self, request: ClientMessage) -> Sequence[Outgoing]:
        match request:
            case Get():
                items = [
                    x
                    for x in self.objects
                    if type(x).__name__ == request.kind
                    and (
                        request.namespace is None or x.metadata.namespace in ("", request.namespace)
                    )
                    and (not request.name or x.metadata.name == request.name)
                ]
                if request.name and not items:
                    message = f'{request.kind.lower()} "{request.name}" not found'
                    return [ErrorReply(id=request.id, code="not_found", message=message)]
                return [GetReply(id=request.id, revision=self.revision, items=items)]
            case Put():
                actions = ["created", "replaced", "unchanged"]
                statuses = [
                    _status(x.metadata.namespace, x.metadata.name, type(x).__name__, actions[i % 3])
                    for i, x in enumerate(request.objects)
                ]
                return [PutReply(id=request.id, revision=self.revision, objects=statuses)]
            case Delete():
                statuses = [_status(r.namespace, r.name, r.kind, "deleted") for r in request.refs]
                return [DeleteReply(id=request.id, revision=self.revision, objects=statuses)]
            case Cancel():
                return [CancelReply(id=request.id)]
        raise AssertionError(f"unexpected {request!r}")


def _status(namespace: str, name: str, kind: str, action: str) -> ObjectStatus:
    return ObjectStatus(
        kind=kind,
        namespace=namespace,
        name=name,
        uid="u",
        resource_version="41",
        action=action,  # type: ignore[arg-type]  # the Literal's values
    )


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(handler)`` starts a fake daemon for the test (stopped at teardown)."""
    stack: list[Any] = []

    def start(handler: Handler) -> FakeServer:
        cm = fake_server_thread(handler)
        server = cm.__enter__()
        stack.append(cm)
        return server

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def stamped(builder: Any, created: str, **metadata: Any) -> Any:
    d = builder.dict()
    d["metadata"].update(creationTimestamp=created, **metadata)
    return decode(type(builder.obj()), d)


def write(path: Path, docs: Sequence[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return str(path)


def free_address() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


# --------------------------------------------------------------------------- apply


def test_apply_sends_one_put_and_prints_kubectl_lines(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    path = write(
        tmp_path / "cluster.yaml",
        [
            make_node("n1").capacity(cpu="4").dict(),
            make_pod("web-1").req(cpu="100m").dict(),
            make_pod("web-2").ns("shop").dict(),
        ],
    )
    assert podium("apply", "-f", path, "--server", server.address) == 0
    out, err = capsys.readouterr()
    assert out == ("node/n1 created\npod/default/web-1 configured\npod/shop/web-2 unchanged\n")
    assert err == ""
    assert len(server.requests) == 1  # one atomic request
    put = server.requests[0]
    assert isinstance(put, Put)
    assert [x.metadata.name for x in put.objects] == ["n1", "web-1", "web-2"]


def test_apply_reads_stdin_and_prints_json(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    data = json.dumps(make_node("n1").dict()).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert podium("apply", "-f", "-", "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {
        "revision": 41,
        "objects": [
            {
                "kind": "Node",
                "namespace": "",
                "name": "n1",
                "uid": "u",
                "resource_version": "41",
                "action": "created",
            }
        ],
        "skipped": {},
    }


_OTHER_KINDS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "b"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg-2"}},
]


def test_apply_skips_the_kinds_podium_does_not_schedule_with_one_summary_line(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    path = write(
        tmp_path / "all.yaml", [*_OTHER_KINDS[:2], make_node("n1").dict(), *_OTHER_KINDS[2:]]
    )
    assert podium("apply", "-f", path, "--server", server.address) == 0
    out, err = capsys.readouterr()
    assert out == "node/n1 created\n"
    assert err == (
        "skipped 4 objects of 3 kinds Podium does not schedule: ConfigMap 2, Deployment 1, "
        "Secret 1\n"
    )
    (put,) = server.requests
    assert isinstance(put, Put)
    assert [type(x).__name__ for x in put.objects] == ["Node"]


def test_apply_json_counts_the_skipped_kinds(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    path = write(tmp_path / "all.yaml", [make_node("n1").dict(), *_OTHER_KINDS])
    assert podium("apply", "-f", path, "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["skipped"] == {"ConfigMap": 2, "Deployment": 1, "Secret": 1}
    assert list(doc["skipped"]) == ["ConfigMap", "Deployment", "Secret"]


def test_apply_strict_refuses_an_unknown_kind_naming_file_object_and_kind(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    path = write(tmp_path / "all.yaml", [make_node("n1").dict(), _OTHER_KINDS[1]])
    assert podium("apply", "-f", path, "--strict", "--server", server.address) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        f"error: {path}: object 1 (Deployment web) at $.kind: unknown kind 'Deployment'; "
        "Podium knows Node, "
    )
    assert err.endswith("error: nothing was sent\n")
    assert server.requests == []


@pytest.mark.parametrize("command", ["apply", "delete"])
def test_a_file_of_only_skipped_kinds_sends_nothing_and_succeeds(
    command: str, serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As `simulate` reads it (issue 26 point 2): "apply every rendered file" loops go on.
    server = serve(Daemon([]))
    path = write(tmp_path / "cfg.yaml", _OTHER_KINDS[:2])
    assert podium(command, "-f", path, "--server", server.address) == 0
    assert capsys.readouterr() == (
        "",
        "skipped 2 objects of 2 kinds Podium does not schedule: ConfigMap 1, Deployment 1\n",
    )
    assert podium(command, "-f", path, "--server", server.address, "-o", "json") == 0
    out, _ = capsys.readouterr()
    assert json.loads(out) == {"objects": [], "skipped": {"ConfigMap": 1, "Deployment": 1}}
    assert server.requests == []


def test_apply_of_a_file_without_objects_fails(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing yet\n---\n")
    assert podium("apply", "-f", str(path), "--server", server.address) == 1
    assert capsys.readouterr().err == f"error: no objects found in {path}\n"
    assert server.requests == []


def test_apply_with_a_file_that_does_not_load_sends_nothing(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    bad = make_pod("web-1").req(cpu="lots").dict()
    path = write(tmp_path / "bad.yaml", [make_node("n1").dict(), bad])
    assert podium("apply", "-f", path, "--server", server.address) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"error: {path}: object 1 (Pod default/web-1) at "
        "$.spec.containers[0].resources.requests['cpu']: quantity 'lots' does not match the "
        "Kubernetes quantity grammar (e.g. '100m', '1.5', '1Gi', '2e3', '500M')\n"
        "error: nothing was sent\n"
    )
    assert server.requests == []


def test_apply_rejected_lists_every_object_and_exits_1(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        errors = [
            ObjectError(
                index=1,
                kind="Pod",
                namespace="default",
                name="web-1",
                path="$.spec.nodeName",
                message="node n9 does not exist",
            ),
            ObjectError(
                index=2, kind="Node", namespace="", name="n2", path=None, message="conflict"
            ),
        ]
        message = "2 of 3 objects rejected; nothing was written"
        return [ErrorReply(id=request.id, code="invalid", message=message, errors=errors)]

    server = serve(handler)
    path = write(
        tmp_path / "c.yaml",
        [make_node("n1").dict(), make_pod("web-1").node("n9").dict(), make_node("n2").dict()],
    )
    assert podium("apply", "-f", path, "--server", server.address) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "error: 2 of 3 objects rejected; nothing was written\n"
        "error: object 1 (Pod default/web-1) at $.spec.nodeName: node n9 does not exist\n"
        "error: object 2 (Node n2): conflict\n"
    )


def test_unreachable_daemon_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = free_address()
    path = write(tmp_path / "n.yaml", [make_node("n1").dict()])
    assert podium("apply", "-f", path, "--server", address) == 1
    assert capsys.readouterr().err == (
        f"error: cannot reach podium at {address}: connection refused "
        "(is `podium serve` running?)\n"
    )


def test_server_comes_from_the_environment(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([make_node("n1").obj()]))
    monkeypatch.setenv("PODIUM_SERVER", server.address)
    assert podium("get", "nodes", "-o", "json") == 0
    assert json.loads(capsys.readouterr().out)["items"][0]["metadata"]["name"] == "n1"


@dataclass(frozen=True)
class RequestFieldError:
    name: str
    argv: tuple[str, ...]
    code: ErrorCode
    message: str
    path: str | None
    want: str


REQUEST_FIELD_ERRORS = [
    RequestFieldError(
        "a bad token names the flags, not $.token",
        ("get", "pods", "--token", "nope"),
        "unauthorized",
        "this listener requires an access token and the token is not valid",
        "$.token",
        "error: this listener requires an access token and the token is not valid"
        " (--token, --token-file or $PODIUM_TOKEN)\n",
    ),
    RequestFieldError(
        "a bad selector names -l",
        ("get", "pods", "-l", "a in ("),
        "invalid",
        'couldn\'t parse the label selector "a in (": found end of string at position 6',
        "$.label_selector",
        'error: couldn\'t parse the label selector "a in (": found end of string at position 6'
        " (-l/--selector)\n",
    ),
    RequestFieldError(
        "a decode error's own path becomes the flag",
        ("get", "pods"),
        "invalid",
        "Expected `int` >= 0 at $.from_revision",
        "$.from_revision",
        "error: Expected `int` >= 0 (--from-revision)\n",
    ),
    RequestFieldError(
        "a field the client fills by itself is not shown",
        ("get", "pods"),
        "invalid",
        "the continue token is stale; list again",
        "$.continue",
        "error: the continue token is stale; list again\n",
    ),
    RequestFieldError(
        "a field of an object the person wrote keeps its path",
        ("get", "pods"),
        "invalid",
        "Expected `int`, got `str`",
        "$.pod.spec.priority",
        "error: Expected `int`, got `str` at $.pod.spec.priority\n",
    ),
]


@pytest.mark.parametrize("case", REQUEST_FIELD_ERRORS, ids=attrgetter("name"))
def test_request_field_errors_are_said_for_the_person(
    serve: Any, capsys: pytest.CaptureFixture[str], case: RequestFieldError
) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [
            ErrorReply(
                id=request.id,
                code=case.code,
                message=case.message,
                path=case.path,
            )
        ]

    server = serve(handler)
    assert podium(*case.argv, "--server", server.address) == 1
    assert capsys.readouterr().err == case.want


def test_bad_server_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        podium("stats", "--server", "nowhere")
    assert info.value.code == 2
    assert "is not HOST:PORT or unix:PATH" in capsys.readouterr().err


# --------------------------------------------------------------------------- delete


def test_delete_by_kind_and_name(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(Daemon([]))
    assert podium("delete", "po", "web-1", "--server", server.address) == 0
    assert podium("delete", "no", "n1", "-n", "ignored", "--server", server.address) == 0
    assert capsys.readouterr().out == "pod/default/web-1 deleted\nnode/n1 deleted\n"
    assert [r.refs for r in server.requests if isinstance(r, Delete)] == [
        [ObjectRef(kind="Pod", name="web-1", namespace="default")],
        [ObjectRef(kind="Node", name="n1", namespace="")],
    ]


def test_delete_the_objects_of_a_file(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    path = write(tmp_path / "c.yaml", [make_node("n1").dict(), make_pod("a").ns("x").dict()])
    assert podium("delete", "-f", path, "--server", server.address) == 0
    assert capsys.readouterr().out == "node/n1 deleted\npod/x/a deleted\n"


def _rejected(
    index: int, kind: str, name: str, message: str, path: str | None = None
) -> ObjectError:
    namespace = "default" if kind == "Pod" else ""
    return ObjectError(
        index=index, kind=kind, namespace=namespace, name=name, path=path, message=message
    )


@dataclass(frozen=True)
class Rejection:
    """A rejected request, its reply as store/core.py builds it, and what the person reads."""

    name: str
    argv: tuple[str, ...]
    message: str
    errors: tuple[ObjectError, ...]
    want: str


REJECTIONS = [
    Rejection(
        "a delete of a missing object says it once",
        ("delete", "pod", "web-9"),
        "Pod default/web-9 not found; cannot delete it; nothing was written",
        (_rejected(0, "Pod", "web-9", "Pod default/web-9 not found; cannot delete it"),),
        "error: Pod default/web-9 not found; cannot delete it; nothing was written\n",
    ),
    Rejection(
        "several missing objects: the count, then each once",
        ("delete", "-f", "FILE"),
        "2 of 2 objects rejected, nothing was written; "
        "first: Pod default/a not found; cannot delete it",
        (
            _rejected(0, "Pod", "a", "Pod default/a not found; cannot delete it"),
            _rejected(1, "Pod", "b", "Pod default/b not found; cannot delete it"),
        ),
        "error: 2 of 2 objects rejected, nothing was written\n"
        "error: object 0 (Pod default/a): Pod default/a not found; cannot delete it\n"
        "error: object 1 (Pod default/b): Pod default/b not found; cannot delete it\n",
    ),
    Rejection(
        "one rejected field is one line with its object and path",
        ("apply", "-f", "FILE"),
        "node n9 does not exist; nothing was written",
        (_rejected(1, "Pod", "web-1", "node n9 does not exist", "$.spec.nodeName"),),
        "error: object 1 (Pod default/web-1) at $.spec.nodeName: node n9 does not exist; "
        "nothing was written\n",
    ),
]


@pytest.mark.parametrize("case", REJECTIONS, ids=attrgetter("name"))
def test_a_rejection_says_each_objects_error_once(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Rejection
) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        errors = list(case.errors)
        return [ErrorReply(id=request.id, code="invalid", message=case.message, errors=errors)]

    server = serve(handler)
    path = write(tmp_path / "c.yaml", [make_pod(e.name).dict() for e in case.errors])
    argv = [path if a == "FILE" else a for a in case.argv]
    assert podium(*argv, "--server", server.address) == 1
    assert capsys.readouterr().err == case.want


def test_delete_needs_kind_and_name_or_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert podium("delete", "pod") == 2
    assert "give KIND NAME" in capsys.readouterr().err


# --------------------------------------------------------------------------- get


def cluster() -> list[o.KubeObject]:
    return [
        stamped(
            make_node("n1")
            .capacity(cpu="4", memory="32Gi", pods=110)
            .label("topology.kubernetes.io/zone", "zone-a"),
            FOUR_DAYS_AGO,
        ),
        stamped(
            make_node("n2")
            .capacity(cpu="8", memory="64Gi", pods=110)
            .allocatable({"cpu": "7500m", "memory": "60Gi", "pods": "100"})
            .label("failure-domain.beta.kubernetes.io/zone", "zone-b")
            .condition("Ready", "False")
            .unschedulable()
            .taint("dedicated", "gpu")
            .taint("spot", effect="PreferNoSchedule"),
            THREE_MINUTES_AGO,
        ),
        stamped(make_pod("web-1").req(cpu="100m", memory="512Mi").node("n1"), FOUR_DAYS_AGO),
        stamped(make_pod("big").req(cpu="3", memory="1G").priority(1000), THREE_MINUTES_AGO),
        stamped(make_pod("done").phase("Succeeded").node("n1"), FOUR_DAYS_AGO),
        stamped(make_pod("db-0").ns("shop").node("n2"), THREE_MINUTES_AGO),
    ]


def _with_status(pod: o.Pod, **status: Any) -> o.Pod:
    return msgspec.structs.replace(pod, status=msgspec.convert(status, o.PodStatus))


def daemon_with_pending_message() -> Daemon:
    objects = cluster()
    big = objects[3]
    assert isinstance(big, o.Pod)
    objects[3] = _with_status(
        big,
        nominatedNodeName="n2",
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available: 2 Insufficient cpu.",
            }
        ],
    )
    return Daemon(objects)


@dataclass(frozen=True)
class GetCase:
    name: str
    argv: tuple[str, ...]
    out: str
    err: str = ""


GET_CASES = [
    GetCase(
        "pods in the default namespace",
        ("get", "pods"),
        "NAME    STATUS      NODE     AGE\n"
        "web-1   Bound       n1       4d\n"
        "big     Pending     <none>   3m\n"
        "done    Succeeded   n1       4d\n",
    ),
    GetCase(
        "pods in every namespace",
        ("get", "po", "-A"),
        "NAMESPACE   NAME    STATUS      NODE     AGE\n"
        "default     web-1   Bound       n1       4d\n"
        "default     big     Pending     <none>   3m\n"
        "default     done    Succeeded   n1       4d\n"
        "shop        db-0    Bound       n2       3m\n",
    ),
    GetCase(
        "pods wide",
        ("get", "Pod", "-o", "wide"),
        "NAME    STATUS      NODE     AGE   PRIORITY   CPU    MEMORY   NOMINATED NODE   MESSAGE\n"
        "web-1   Bound       n1       4d    0          100m   512Mi    <none>\n"
        "big     Pending     <none>   3m    1000       3      1G       n2               "
        "0/2 nodes are available: 2 Insufficient cpu.\n"
        "done    Succeeded   n1       4d    0          0      0        <none>\n",
    ),
    GetCase(
        "one pod by name",
        ("get", "pod", "db-0", "-n", "shop"),
        "NAME   STATUS   NODE   AGE\ndb-0   Bound    n2     3m\n",
    ),
    GetCase(
        "nodes",
        ("get", "nodes"),
        "NAME   STATUS                        PODS   CPU     MEMORY   AGE\n"
        "n1     Unknown                       110    4       32Gi     4d\n"
        "n2     NotReady,SchedulingDisabled   100    7500m   60Gi     3m\n",
    ),
    GetCase(
        "nodes wide",
        ("get", "no", "-o", "wide"),
        "NAME   STATUS                        PODS   CPU     MEMORY   AGE   ZONE     TAINTS\n"
        "n1     Unknown                       110    4       32Gi     4d    zone-a   <none>\n"
        "n2     NotReady,SchedulingDisabled   100    7500m   60Gi     3m    zone-b   "
        "dedicated=gpu:NoSchedule,spot:PreferNoSchedule\n",
    ),
    GetCase(
        "an empty namespace",
        ("get", "pods", "-n", "empty"),
        "",
        "No resources found in empty namespace.\n",
    ),
    GetCase("no objects of a cluster kind", ("get", "pv"), "", "No resources found\n"),
]


@pytest.mark.parametrize("case", GET_CASES, ids=attrgetter("name"))
def test_get_tables(serve: Any, capsys: pytest.CaptureFixture[str], case: GetCase) -> None:
    server = serve(daemon_with_pending_message())
    assert podium(*case.argv, "--server", server.address) == 0
    out, err = capsys.readouterr()
    assert out == case.out
    assert err == case.err


@dataclass(frozen=True)
class NodeStatusCase:
    name: str
    conditions: tuple[tuple[str, str], ...]
    unschedulable: bool
    want: str


# kubernetes/kubernetes pkg/printers/internalversion/printers_test.go TestPrintNodeStatus
# (foo1-foo9), as kubectl's printNode prints the STATUS column.
NODE_STATUS_CASES = [
    NodeStatusCase("foo1 ready", (("Ready", "True"),), False, "Ready"),
    NodeStatusCase(
        "foo2 ready, unschedulable", (("Ready", "True"),), True, "Ready,SchedulingDisabled"
    ),
    NodeStatusCase(
        "foo3 two ready conditions", (("Ready", "True"), ("Ready", "True")), False, "Ready"
    ),
    NodeStatusCase("foo4 not ready", (("Ready", "False"),), False, "NotReady"),
    NodeStatusCase(
        "foo5 not ready, unschedulable", (("Ready", "False"),), True, "NotReady,SchedulingDisabled"
    ),
    NodeStatusCase(
        "foo6 only an unknown condition type", (("InvalidValue", "True"),), False, "Unknown"
    ),
    NodeStatusCase("foo7 an empty condition", (("", ""),), False, "Unknown"),
    NodeStatusCase(
        "foo8 unknown condition type, unschedulable",
        (("InvalidValue", "True"),),
        True,
        "Unknown,SchedulingDisabled",
    ),
    NodeStatusCase(
        "foo9 empty condition, unschedulable", (("", ""),), True, "Unknown,SchedulingDisabled"
    ),
    NodeStatusCase("no conditions at all", (), False, "Unknown"),
    NodeStatusCase("ready status Unknown", (("Ready", "Unknown"),), False, "NotReady"),
    NodeStatusCase(
        "the last ready condition wins", (("Ready", "False"), ("Ready", "True")), False, "Ready"
    ),
]


@pytest.mark.parametrize("case", NODE_STATUS_CASES, ids=attrgetter("name"))
def test_node_status_as_kubectl_prints_it(case: NodeStatusCase) -> None:
    node = make_node("n")
    for type_, status in case.conditions:
        node = node.condition(type_, status)
    if case.unschedulable:
        node = node.unschedulable()
    assert objects.node_status(node.obj()) == case.want


def test_get_sends_namespace_and_selector(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(Daemon([]))
    podium("get", "pods", "-l", "app=web,tier!=db", "--server", server.address)
    podium("get", "pods", "-A", "--server", server.address)
    podium("get", "nodes", "-n", "shop", "--server", server.address)
    podium("get", "nodes", "--chunk-size", "0", "--server", server.address)
    podium("get", "node", "n1", "--server", server.address)
    page = DEFAULT_CHUNK_SIZE
    assert server.requests == [
        Get(id=1, kind="Pod", namespace="default", label_selector="app=web,tier!=db", limit=page),
        Get(id=1, kind="Pod", namespace=None, limit=page),
        # cluster-scoped: the namespace is not sent
        Get(id=1, kind="Node", namespace=None, limit=page),
        Get(id=1, kind="Node", namespace=None),
        Get(id=1, kind="Node", name="n1"),  # one object: no pages
    ]


def test_get_other_kinds(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def obj(kind: str, name: str, **fields: Any) -> Any:
        meta = {"name": name, "creationTimestamp": THREE_MINUTES_AGO}
        if kind in o.NAMESPACED_KINDS:
            meta["namespace"] = "default"
        return msgspec.convert({"metadata": meta, **fields}, o.KINDS[kind], dec_hook=o.dec_hook)

    server = serve(
        Daemon(
            [
                obj(
                    "PersistentVolume",
                    "pv1",
                    spec={
                        "capacity": {"storage": "10Gi"},
                        "storageClassName": "fast",
                        "claimRef": {"namespace": "default", "name": "data"},
                    },
                    status={"phase": "Bound"},
                ),
                obj("PersistentVolumeClaim", "data", spec={"volumeName": "pv1"}),
                obj("StorageClass", "fast", provisioner="csi.example.com"),
                obj("Service", "web", spec={"selector": {"app": "web"}}),
                obj(
                    "ReplicaSet",
                    "web-rs",
                    spec={
                        "selector": {
                            "matchLabels": {"app": "web"},
                            "matchExpressions": [
                                {"key": "tier", "operator": "In", "values": ["a", "b"]}
                            ],
                        }
                    },
                ),
                obj("PriorityClass", "high", value=1000, globalDefault=True),
            ]
        )
    )
    for kind in ("pv", "pvc", "sc", "svc", "rs", "pc"):
        assert podium("get", kind, "--server", server.address) == 0
    assert capsys.readouterr().out == (
        "NAME   CAPACITY   STATUS   CLAIM          STORAGECLASS   AGE\n"
        "pv1    10Gi       Bound    default/data   fast           3m\n"
        "NAME   STATUS   VOLUME   STORAGECLASS   AGE\n"
        "data   Bound    pv1                     3m\n"
        "NAME   PROVISIONER       VOLUMEBINDINGMODE   AGE\n"
        "fast   csi.example.com   Immediate           3m\n"
        "NAME   SELECTOR   AGE\n"
        "web    app=web    3m\n"
        "NAME     SELECTOR                AGE\n"
        "web-rs   app=web,tier in (a,b)   3m\n"
        "NAME   VALUE   GLOBAL-DEFAULT   AGE\n"
        "high   1000    true             3m\n"
    )


def test_get_json_is_a_kubectl_list(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(Daemon(cluster()))
    assert podium("get", "nodes", "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == ["apiVersion", "kind", "items", "metadata"]
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]) == (
        "v1",
        "List",
        {"resourceVersion": "41"},
    )
    first = doc["items"][0]
    assert list(first)[:3] == ["apiVersion", "kind", "metadata"]
    assert first["apiVersion"] == "v1"
    assert first["kind"] == "Node"
    assert first["status"]["capacity"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}
    # What get prints, apply reads back.
    from podium.protocol.loader import load_text

    assert [x.metadata.name for x in load_text(json.dumps(doc))] == ["n1", "n2"]


def test_get_by_name_prints_the_object(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(Daemon(cluster()))
    assert podium("get", "pod", "web-1", "-o", "yaml", "--server", server.address) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]["name"]) == ("v1", "Pod", "web-1")
    assert doc["metadata"]["creationTimestamp"] == FOUR_DAYS_AGO


def test_get_missing_object_exits_1(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(Daemon([]))
    assert podium("get", "pod", "nope", "--server", server.address) == 1
    assert capsys.readouterr().err == 'error: pod "nope" not found\n'


def test_get_unknown_kind_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert podium("get", "deployments") == 2
    assert 'doesn\'t have a resource type "deployments"' in capsys.readouterr().err


def _svc(name: str, namespace: str, created: str) -> o.Service:
    meta = {"name": name, "namespace": namespace, "creationTimestamp": created}
    return msgspec.convert({"metadata": meta}, o.Service, dec_hook=o.dec_hook)


@pytest.mark.parametrize("alias", ["ns", "namespaces", "namespace", "Namespace"])
def test_get_namespaces_lists_those_the_objects_use_and_default(
    serve: Any, capsys: pytest.CaptureFixture[str], alias: str
) -> None:
    # shop's oldest object is the service (four days), kube-system holds only a service.
    objects = [*cluster(), _svc("api", "shop", FOUR_DAYS_AGO), _svc("dns", "kube-system", NOW_ISO)]
    server = serve(Daemon(objects))
    assert podium("get", alias, "--server", server.address) == 0
    assert capsys.readouterr().out == (
        "NAME          STATUS   AGE\n"
        "default       Active   4d\n"
        "kube-system   Active   0s\n"
        "shop          Active   4d\n"
    )
    # Every namespaced kind is listed across namespaces, each once.
    asked = [r for r in server.requests if isinstance(r, Get)]
    assert sorted(r.kind for r in asked) == sorted(o.NAMESPACED_KINDS)
    assert {r.namespace for r in asked} == {None}


def test_get_namespaces_of_an_empty_daemon_shows_default(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    assert podium("get", "ns", "--server", server.address) == 0
    assert capsys.readouterr().out == "NAME      STATUS   AGE\ndefault   Active   <unknown>\n"


def test_get_namespaces_as_json_and_by_name(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(Daemon(cluster()))
    assert podium("get", "ns", "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["kind"], doc["metadata"]) == ("List", {"resourceVersion": "41"})
    assert doc["items"] == [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "creationTimestamp": created},
            "status": {"phase": "Active"},
        }
        for name, created in (("default", FOUR_DAYS_AGO), ("shop", THREE_MINUTES_AGO))
    ]
    assert podium("get", "ns", "shop", "-o", "yaml", "--server", server.address) == 0
    assert yaml.safe_load(capsys.readouterr().out)["metadata"]["name"] == "shop"
    assert podium("get", "ns", "nope", "--server", server.address) == 1
    assert capsys.readouterr().err == 'error: namespace "nope" not found\n'


def test_get_namespaces_refuses_a_label_selector(capsys: pytest.CaptureFixture[str]) -> None:
    assert podium("get", "ns", "-l", "team=a") == 2
    assert capsys.readouterr().err == (
        "error: namespaces carry no labels in Podium: -l cannot select them\n"
    )


@pytest.mark.parametrize("command", ["get", "delete"])
def test_help_lists_every_kind_with_its_short_name(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        podium(command, "--help")
    text = " ".join(capsys.readouterr().out.split())
    for kind in o.KINDS:
        plural = next(a for a, k in objects.KIND_ALIASES.items() if k == kind and a.endswith("s"))
        short = min((a for a, k in objects.KIND_ALIASES.items() if k == kind), key=len)
        assert f"{plural} ({short})" in text, kind
    assert ("namespaces (ns)" in text) == (command == "get")


# --------------------------------------------------------------------------- watch


def _ev(watch_id: int, revision: int, type_: str, **fields: Any) -> Event:
    return Event(
        id=watch_id,
        revision=revision,
        type=type_,  # type: ignore[arg-type]  # the Literal's values
        kind=fields.pop("kind", "Pod"),
        namespace=fields.pop("namespace", "default"),
        name=fields.pop("name", "web-1"),
        **fields,
    )


def watch_daemon(end: ErrorReply | None, *, resumed: ErrorReply | None = None) -> Handler:
    """A daemon whose lists are empty at revision 40 and whose watch streams revisions 41-43,
    then ``end``; with ``resumed``, the first watch ends so (a retried error) and the next,
    from 43, streams 44 and then ``end``."""
    watches: list[int] = []

    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Cancel):
            return [CancelReply(id=request.id)]
        if isinstance(request, Get):
            return [GetReply(id=request.id, revision=40, items=[])]
        assert isinstance(request, Watch)
        i = request.id
        watches.append(i)
        if resumed is not None and len(watches) > 1:
            assert request.from_revision == 43
            added = _ev(i, 44, "Added", name="web-2", object=make_pod("web-2").obj())
            last = [] if end is None else [msgspec.structs.replace(end, id=i)]
            return [WatchReply(id=i, revision=43), added, *last]
        events: list[Outgoing] = [
            WatchReply(id=i, revision=40),
            _ev(i, 41, "Added", kind="Node", namespace="", name="n1", object=make_node("n1").obj()),
            _ev(i, 42, "Bound", node="n1", object=make_pod("web-1").node("n1").obj()),
            _ev(
                i,
                43,
                "Unschedulable",
                name="big",
                object=make_pod("big").obj(),
                message="0/1 nodes are available: 1 Insufficient cpu.",
            ),
        ]
        ending = resumed if resumed is not None else end
        if ending is not None:
            events.append(msgspec.structs.replace(ending, id=i))
        return events

    return handler


UNAVAILABLE = ErrorReply(id=0, code="unavailable", message="podium is shutting down")
DAMAGED = ErrorReply(id=0, code="internal", message="the event row of revision 44 does not decode")


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The informer behind ``podium watch`` retries at once (its backoff has its own tests)."""
    monkeypatch.setattr(Backoff, "next_delay", lambda self: 0.0)


def test_watch_prints_a_line_per_event(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(watch_daemon(DAMAGED))
    code = podium("watch", "--from-revision", "40", "--kind", "po", "--kind", "no",
                  "--server", server.address)  # fmt: skip
    out, err = capsys.readouterr()
    assert out == (
        "41 Added node/n1\n"
        "42 Bound pod/default/web-1 -> n1\n"
        "43 Unschedulable pod/default/big 0/1 nodes are available: 1 Insufficient cpu.\n"
    )
    assert code == 1  # the stream ended with an error retrying cannot mend
    assert err == "error: the event row of revision 44 does not decode\n"
    assert server.requests[0] == Watch(id=1, from_revision=40, kinds=["Pod", "Node"])


def test_watch_resumes_after_the_daemon_ends_it_printing_nothing_twice(
    serve: Any, capsys: pytest.CaptureFixture[str], no_backoff: None
) -> None:
    server = serve(watch_daemon(DAMAGED, resumed=UNAVAILABLE))
    assert podium("watch", "--from-revision", "40", "--server", server.address) == 1
    out, err = capsys.readouterr()
    assert [line.split(" ")[0] for line in out.splitlines()] == ["41", "42", "43", "44"]
    assert err == (
        "warning: podium is shutting down; trying again in 0.0 s\n"
        "error: the event row of revision 44 does not decode\n"
    )
    watches = [r for r in server.requests if isinstance(r, Watch)]
    assert [w.from_revision for w in watches] == [40, 43]
    assert len(server.connections) == 2  # the command's own, then one to resume


def test_watch_json_is_ndjson(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(watch_daemon(DAMAGED))
    podium("watch", "-o", "json", "--server", server.address)
    lines = capsys.readouterr().out.splitlines()
    docs = [json.loads(line) for line in lines]
    assert [(d["revision"], d["type"], d["name"]) for d in docs] == [
        (41, "Added", "n1"),
        (42, "Bound", "web-1"),
        (43, "Unschedulable", "big"),
    ]
    assert "msg" not in docs[0] and "id" not in docs[0]
    assert docs[1]["node"] == "n1"
    assert docs[1]["object"]["apiVersion"] == "v1"
    assert docs[1]["object"]["spec"]["nodeName"] == "n1"


def test_watch_of_a_compacted_revision_lists_again_and_prints_the_difference(
    serve: Any, capsys: pytest.CaptureFixture[str], no_backoff: None
) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Get):
            pods = [make_pod("web-1").obj()] if request.kind == "Pod" else []
            return [GetReply(id=request.id, revision=500, items=pods)]
        assert isinstance(request, Watch)
        if request.from_revision == 7:
            return [ErrorReply(id=request.id, code="gone", message="compacted", revision=500)]
        assert request.from_revision == 500
        deleted = _ev(request.id, 501, "Deleted", object=make_pod("web-1").obj())
        end = msgspec.structs.replace(DAMAGED, id=request.id)
        return [WatchReply(id=request.id, revision=500), deleted, end]

    server = serve(handler)
    assert podium("watch", "--from-revision", "7", "--server", server.address) == 1
    out, err = capsys.readouterr()
    assert out == "500 Added pod/default/web-1\n501 Deleted pod/default/web-1\n"
    assert err == (
        "warning: compacted; trying again in 0.0 s\n"
        "error: the event row of revision 44 does not decode\n"
    )


def test_get_watch_prints_the_list_then_each_object_as_it_changes(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Get):
            assert (request.kind, request.namespace) == ("Pod", "default")
            return [GetReply(id=request.id, revision=40, items=[make_pod("web-1").obj()])]
        assert isinstance(request, Watch)
        assert (request.from_revision, request.kinds) == (40, ["Pod"])
        i = request.id
        return [
            WatchReply(id=i, revision=40),
            _ev(
                i, 41, "Added", name="db", namespace="shop", object=make_pod("db").ns("shop").obj()
            ),
            _ev(i, 42, "Bound", node="node-1", object=make_pod("web-1").node("node-1").obj()),
            _ev(i, 43, "Added", name="web-2", object=make_pod("web-2").obj()),
            msgspec.structs.replace(DAMAGED, id=i),
        ]

    server = serve(handler)
    assert podium("get", "pods", "-w", "--server", server.address) == 1
    out, err = capsys.readouterr()
    assert out == (
        "NAME    STATUS    NODE     AGE\n"
        "web-1   Pending   <none>   <unknown>\n"
        "web-1   Bound     node-1   <unknown>\n"
        "web-2   Pending   <none>   <unknown>\n"
    )
    assert err == "error: the event row of revision 44 does not decode\n"


def test_ctrl_c_ends_a_watch_with_130_and_no_line(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(watch_daemon(None))
    printed: list[str] = []

    def line_then_interrupt(event: Event) -> str:
        printed.append(str(event.revision))
        if len(printed) == 2:
            raise KeyboardInterrupt  # what trio raises in the main task on Ctrl-C
        return str(event.revision)

    monkeypatch.setattr(objects, "event_line", line_then_interrupt)
    assert main(["watch", "--server", server.address]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("41\n", "")
    watch = next(r for r in server.requests if isinstance(r, Watch))
    assert server.requests[-1] == Cancel(id=watch.id + 1, target=watch.id)  # heard the end


@pytest.mark.parametrize(
    "raised",
    [
        KeyboardInterrupt(),
        # What trio.run raises when the interrupt met a nursery with a connection in it.
        BaseExceptionGroup("", [ConnectionResetError("cut"), KeyboardInterrupt()]),
        BaseExceptionGroup("", [BaseExceptionGroup("", [KeyboardInterrupt()])]),
    ],
    ids=["bare", "in-a-group", "in-a-nested-group"],
)
def test_ctrl_c_stops_a_command_with_130_and_one_line(
    raised: BaseException, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: object) -> int:
        raise raised

    monkeypatch.setattr(stats_command, "cmd_stats", interrupted)
    assert main(["stats"]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "interrupted\n")


def test_ctrl_c_between_making_a_coroutine_and_awaiting_it_says_only_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def connect() -> None:
        raise AssertionError("never awaited")

    def cut_short(args: object) -> int:
        pending = connect()  # as `await trio.open_tcp_stream(...)` is, when SIGINT lands between
        raise KeyboardInterrupt(pending)

    monkeypatch.setattr(stats_command, "cmd_stats", cut_short)
    assert main(["stats"]) == EXIT_INTERRUPTED
    assert capsys.readouterr() == ("", "interrupted\n")  # no "coroutine ... never awaited"


def test_an_error_group_without_an_interrupt_is_not_swallowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(args: object) -> int:
        raise BaseExceptionGroup("", [ConnectionResetError("cut")])

    monkeypatch.setattr(stats_command, "cmd_stats", fail)
    with pytest.RaisesGroup(ConnectionResetError):
        main(["stats"])


# --------------------------------------------------------------------------- explain


EXPLAINED = ExplainReply(
    id=0,
    revision=41,
    placement=Placement(
        namespace="default",
        name="big",
        node=None,
        message="0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu.",
        attempts=4,
        nodes={
            "n2": NodeVerdict(fits=False, reasons=["Insufficient cpu"]),
            "n3": NodeVerdict(fits=False, reasons=["node(s) were unschedulable"]),
            "n1": NodeVerdict(fits=False, reasons=["Insufficient cpu", "Insufficient memory"]),
        },
    ),
    hints=[
        Hint(resource="cpu", missing="200m", nodes=2),
        Hint(resource="memory", missing="1Gi", nodes=1),
    ],
)


def explain_daemon(request: ClientMessage) -> Sequence[Outgoing]:
    assert isinstance(request, Explain)
    return [msgspec.structs.replace(EXPLAINED, id=request.id)]


def test_explain_text(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(explain_daemon)
    assert podium("explain", "big", "--server", server.address) == 0
    assert server.requests == [Explain(id=1, namespace="default", name="big")]
    assert capsys.readouterr().out == (
        "Pod:       default/big\n"
        "Node:      <none>\n"
        "Message:   0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu.\n"
        "Attempts:  4\n"
        "\n"
        "NODE   FITS   REASONS                                 TOTAL\n"
        "n2     no     Insufficient cpu                        -\n"
        "n3     no     node(s) were unschedulable              -\n"
        "n1     no     Insufficient cpu, Insufficient memory   -\n"
        "\n"
        "Hints:\n"
        "  needs 200m more cpu on 2 nodes\n"
        "  needs 1Gi more memory on 1 node\n"
    )


def test_explain_says_no_node_can_ever_hold_a_pod_asking_beyond_every_node(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        hint = Hint(resource="nvidia.com/gpu", missing="4", nodes=2, is_beyond_every_node=True)
        return [msgspec.structs.replace(EXPLAINED, id=request.id, hints=[hint])]

    server = serve(handler)
    assert podium("explain", "big", "--server", server.address) == 0
    assert capsys.readouterr().out.endswith(
        "Hints:\n"
        "  no node can ever hold it: it asks 4 more nvidia.com/gpu than the largest node's "
        "allocatable\n"
    )


def test_explain_of_a_pod_that_fits(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        placement = Placement(
            namespace="shop",
            name="db-0",
            node="n1",
            message=None,
            attempts=1,
            nodes={
                "n1": NodeVerdict(fits=True, scores={"LeastRequestedPriority": 7}, total=7),
                "n2": NodeVerdict(fits=True, total=5),
            },
        )
        return [ExplainReply(id=request.id, revision=41, placement=placement)]

    server = serve(handler)
    assert podium("explain", "shop/db-0", "--server", server.address) == 0
    assert server.requests == [Explain(id=1, namespace="shop", name="db-0")]
    assert capsys.readouterr().out == (
        "Pod:       shop/db-0\n"
        "Node:      n1\n"
        "Attempts:  1\n"
        "\n"
        "NODE   FITS   REASONS   TOTAL\n"
        "n1     yes    -         7\n"
        "n2     yes    -         5\n"
    )


def test_explain_of_a_bound_pod_shows_its_node_and_no_attempts(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        placement = Placement(namespace="shop", name="db-0", node="n1", message=None, bound=True)
        return [ExplainReply(id=request.id, revision=41, placement=placement)]

    server = serve(handler)
    assert podium("explain", "shop/db-0", "--server", server.address) == 0
    assert capsys.readouterr().out == "Pod:       shop/db-0\nNode:      n1\nStatus:    Bound\n"


def test_explain_json_is_the_simulate_entry_plus_hints(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(explain_daemon)
    assert podium("explain", "default/big", "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == [
        "namespace",
        "name",
        "node",
        "message",
        "attempts",
        "nodes",
        "preempted",
        "bound",
        "hints",
    ]
    assert doc["nodes"]["n1"] == {
        "fits": False,
        "reasons": ["Insufficient cpu", "Insufficient memory"],
        "scores": {},
        "total": None,
    }
    assert list(doc["nodes"]) == ["n2", "n3", "n1"]  # walk order kept
    assert doc["hints"] == [
        {"resource": "cpu", "missing": "200m", "nodes": 2, "is_beyond_every_node": False},
        {"resource": "memory", "missing": "1Gi", "nodes": 1, "is_beyond_every_node": False},
    ]


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("a/b/c", "explain takes a pod or a pod group (pod/NS/NAME, podgroup/NS/NAME), not 'a'"),
        ("node/n1/x", "explain takes a pod or a pod group"),
        ("a//b", "is not NAME, NAMESPACE/NAME or KIND/[NAMESPACE/]NAME"),
        ("pg/a/b/c", "is not NAME, NAMESPACE/NAME or KIND/[NAMESPACE/]NAME"),
    ],
)
def test_explain_rejects_a_malformed_name(
    capsys: pytest.CaptureFixture[str], ref: str, message: str
) -> None:
    assert podium("explain", ref) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("ref", "namespace", "target"),
    [
        ("web", None, ("Pod", "default", "web")),
        ("shop/web", None, ("Pod", "shop", "web")),
        ("web", "shop", ("Pod", "shop", "web")),
        ("pod/shop/web", None, ("Pod", "shop", "web")),
        ("po/web", "shop", ("Pod", "shop", "web")),
        ("podgroup/ml/train", None, ("PodGroup", "ml", "train")),
        ("PodGroups/ml/train", "ml", ("PodGroup", "ml", "train")),
        ("pg/train", None, ("PodGroup", "default", "train")),
        ("pg/train", "ml", ("PodGroup", "ml", "train")),
    ],
)
def test_explain_names_a_pod_as_before_or_a_pod_group_as_get_does(
    ref: str, namespace: str | None, target: tuple[str, str, str]
) -> None:
    assert explain_target(ref, namespace) == target


def test_explain_refuses_a_namespace_two_ways() -> None:
    with pytest.raises(ValueError, match="is in namespace ml, not shop"):
        explain_target("podgroup/ml/train", "shop")


def _member(name: str, **fields: Any) -> Placement:
    return Placement(namespace="ml", name=name, **fields)


QUORUM = "waiting for pod group ml/train: 5 of 8 pods exist"


def _train(**fields: Any) -> GroupPlacement:
    """The gang ml/train, as explain podgroup answers it."""
    return GroupPlacement(namespace="ml", name="train", policy="gang", **fields)


WAITING = _train(
    min_count=8,
    bound=0,
    needed=8,
    fit=0,
    placed=False,
    waiting=True,
    message=QUORUM,
    members=[_member("w0", node=None, message=QUORUM)],
)
"""A gang short of its quorum, as explain podgroup answers it."""

GROUP_EXPLAINED = ExplainGroupReply(
    id=0,
    revision=41,
    group=_train(
        min_count=4,
        bound=1,
        needed=3,
        fit=1,
        placed=False,
        message=(
            "pod group ml/train: 1 of 3 members fit, minCount 4 (1 bound already); ml/w2: 0/2 "
            "nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 "
            "No preemption victims found for incoming pod.; ml/w1: 0/2 nodes are available: 2 "
            "Insufficient cpu."
        ),
        members=[
            _member("w3", node="n1", message=None, bound=True),
            _member("w0", node="n0", message=None, attempts=2),
            _member(
                "w1",
                node=None,
                message="0/2 nodes are available: 2 Insufficient cpu.",
                attempts=2,
                nodes={"n0": NodeVerdict(fits=False, reasons=["Insufficient cpu"])},
            ),
            _member(
                "w2",
                node=None,
                message="0/2 nodes are available: 2 Insufficient cpu. preemption: ...",
                attempts=2,
                nodes={"n1": NodeVerdict(fits=False, reasons=["Insufficient cpu"])},
            ),
        ],
        blocking=["ml/w1", "ml/w2"],
        hints={"ml/w1": [Hint(resource="cpu", missing="500m", nodes=1)]},
    ),
)


def test_explain_of_a_pod_group_text(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [msgspec.structs.replace(GROUP_EXPLAINED, id=request.id)]

    server = serve(handler)
    assert podium("explain", "podgroup/ml/train", "--server", server.address) == 0
    assert server.requests == [Explain(id=1, namespace="ml", name="train", kind="PodGroup")]
    assert capsys.readouterr().out == (
        "PodGroup:  ml/train\n"
        "Policy:    gang, minCount 4 (1 bound)\n"
        "Placed:    no: 1 of 3 members fit, 3 needed\n"
        f"Message:   {GROUP_EXPLAINED.group.message}\n"
        "Blocked:   ml/w1, ml/w2\n"
        "\n"
        "MEMBER   NODE     VERDICT\n"
        "w3       n1       bound\n"
        "w0       n0       fits\n"
        "w1       <none>   0/2 nodes are available: 2 Insufficient cpu.\n"
        "w2       <none>   0/2 nodes are available: 2 Insufficient cpu. preemption: ...\n"
        "\n"
        "ml/w1:\n"
        "NODE   FITS   REASONS            TOTAL\n"
        "n0     no     Insufficient cpu   -\n"
        "Hints:\n"
        "  needs 500m more cpu on 1 node\n"
        "\n"
        "ml/w2:\n"
        "NODE   FITS   REASONS            TOTAL\n"
        "n1     no     Insufficient cpu   -\n"
    )


def test_explain_of_a_pod_group_that_preemption_would_place_and_one_that_waits(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    evicting = msgspec.structs.replace(
        GROUP_EXPLAINED.group,
        members=[
            _member(
                "w0",
                node=None,
                message="0/1 nodes are available: 1 Insufficient cpu.",
                preempted=["batch/v0"],
            ),
        ],
        blocking=[],
        hints={},
        preempted=["batch/v0"],
        message=None,
        fit=0,
        needed=1,
    )
    waiting = WAITING
    groups = iter([evicting, waiting])

    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [ExplainGroupReply(id=request.id, revision=41, group=next(groups))]

    server = serve(handler)
    assert podium("explain", "pg/train", "-n", "ml", "--server", server.address) == 0
    text = capsys.readouterr().out
    assert (
        "Placed:    no: 0 of 1 members fit, 1 needed; preemption would evict 1 pod, then it fits\n"
        in text
    )
    assert "Preempts:  batch/v0\n" in text
    assert (
        "w0       <none>   0/1 nodes are available: 1 Insufficient cpu. (evicting batch/v0)\n"
        in text
    )
    assert podium("explain", "pg/ml/train", "--server", server.address) == 0
    assert capsys.readouterr().out.startswith(
        "PodGroup:  ml/train\n"
        "Policy:    gang, minCount 8 (0 bound)\n"
        "Placed:    no: waiting for pod group ml/train: 5 of 8 pods exist\n"
        "\n"
    )


def test_explain_of_a_pod_group_json(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [msgspec.structs.replace(GROUP_EXPLAINED, id=request.id)]

    server = serve(handler)
    assert podium("explain", "pg/ml/train", "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == [
        "namespace",
        "name",
        "policy",
        "min_count",
        "bound",
        "needed",
        "fit",
        "placed",
        "waiting",
        "message",
        "members",
        "blocking",
        "hints",
        "preempted",
    ]
    assert [(m["name"], m["node"], m["bound"]) for m in doc["members"]] == [
        ("w3", "n1", True),
        ("w0", "n0", False),
        ("w1", None, False),
        ("w2", None, False),
    ]
    assert doc["members"][2]["nodes"] == {
        "n0": {"fits": False, "reasons": ["Insufficient cpu"], "scores": {}, "total": None}
    }
    assert doc["hints"] == {
        "ml/w1": [{"resource": "cpu", "missing": "500m", "nodes": 1, "is_beyond_every_node": False}]
    }
    assert (doc["placed"], doc["fit"], doc["needed"], doc["blocking"]) == (
        False,
        1,
        3,
        ["ml/w1", "ml/w2"],
    )


MEMBER_EXPLAINED = ExplainReply(
    id=0,
    revision=41,
    placement=GROUP_EXPLAINED.group.members[2],
    hints=GROUP_EXPLAINED.group.hints["ml/w1"],
    group=GROUP_EXPLAINED.group,
)


def test_explain_of_a_member_gives_its_groups_verdict(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``podium explain ml/w1`` of a gang's member: the member as its group's attempt judges
    it, then the group's verdict as ``explain podgroup/ml/train`` gives it (the members'
    tables left to that command), in one request; the same in JSON under ``group``."""

    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [msgspec.structs.replace(MEMBER_EXPLAINED, id=request.id)]

    server = serve(handler)
    assert podium("explain", "ml/w1", "--server", server.address) == 0
    assert server.requests == [Explain(id=1, namespace="ml", name="w1")]
    assert capsys.readouterr().out == (
        "Pod:       ml/w1\n"
        "Node:      <none>\n"
        "Message:   0/2 nodes are available: 2 Insufficient cpu.\n"
        "Attempts:  2\n"
        "\n"
        "NODE   FITS   REASONS            TOTAL\n"
        "n0     no     Insufficient cpu   -\n"
        "\n"
        "Hints:\n"
        "  needs 500m more cpu on 1 node\n"
        "\n"
        "PodGroup:  ml/train\n"
        "Policy:    gang, minCount 4 (1 bound)\n"
        "Placed:    no: 1 of 3 members fit, 3 needed\n"
        f"Message:   {GROUP_EXPLAINED.group.message}\n"
        "Blocked:   ml/w1, ml/w2\n"
        "\n"
        "ml/w1:\n"
        "Hints:\n"
        "  needs 500m more cpu on 1 node\n"
    )
    assert podium("explain", "ml/w1", "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["name"], doc["node"], doc["hints"][0]["missing"]) == ("w1", None, "500m")
    assert doc["group"] == msgspec.to_builtins(GROUP_EXPLAINED.group)
    waiting = msgspec.structs.replace(
        MEMBER_EXPLAINED, placement=WAITING.members[0], hints=[], group=WAITING
    )

    def waits(request: ClientMessage) -> Sequence[Outgoing]:
        return [msgspec.structs.replace(waiting, id=request.id)]

    server = serve(waits)
    assert podium("explain", "ml/w0", "--server", server.address) == 0
    assert capsys.readouterr().out.endswith(
        "PodGroup:  ml/train\n"
        "Policy:    gang, minCount 8 (0 bound)\n"
        "Placed:    no: waiting for pod group ml/train: 5 of 8 pods exist\n"
    )


def test_explain_of_a_member_that_fits_alone_in_a_group_not_placed_has_no_node(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Node: n0`` would read as the pod's place; a member its gang's attempt would place on
    n0 is not placed while the gang is not, and the line says both."""
    fits = msgspec.structs.replace(MEMBER_EXPLAINED, placement=GROUP_EXPLAINED.group.members[1])

    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [msgspec.structs.replace(fits, id=request.id)]

    server = serve(handler)
    assert podium("explain", "ml/w0", "--server", server.address) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "Pod:       ml/w0",
        "Node:      <none> (fits n0 alone; its group would not be placed)",
    ]
    placed = msgspec.structs.replace(
        fits, group=msgspec.structs.replace(GROUP_EXPLAINED.group, placed=True)
    )

    def placed_handler(request: ClientMessage) -> Sequence[Outgoing]:
        return [msgspec.structs.replace(placed, id=request.id)]

    server = serve(placed_handler)
    assert podium("explain", "ml/w0", "--server", server.address) == 0
    assert capsys.readouterr().out.splitlines()[1] == "Node:      n0"


def test_explain_json_of_a_pod_without_a_group_has_no_group_key(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(explain_daemon)
    assert podium("explain", "big", "-o", "json", "--server", server.address) == 0
    assert "group" not in json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------- stats, policy, schema


def stats_daemon(request: ClientMessage) -> Sequence[Outgoing]:
    assert isinstance(request, Stats)
    return [
        StatsReply(
            id=request.id,
            revision=41,
            ready=True,
            nodes=3,
            pods=12,
            bound=9,
            assumed=1,
            pending=PendingCounts(active=1, backoff=0, unschedulable=2),
            scheduled=9,
            unschedulable=5,
            errors=0,
            connections=2,
            watchers=1,
            uptime_seconds=9000,
        )
    ]


def test_stats_text(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(stats_daemon)
    assert podium("stats", "--server", server.address) == 0
    assert capsys.readouterr().out == (
        "revision      41\n"
        "ready         true\n"
        "nodes         3\n"
        "pods          12 (bound 9, assumed 1)\n"
        "pending       3 (active 1, backoff 0, unschedulable 2)\n"
        "attempts      scheduled 9, unschedulable 5, errors 0\n"
        "connections   2 (watchers 1)\n"
        "leader        this daemon\n"
        "uptime        150m\n"
        "server        fake\n"
    )


@pytest.mark.parametrize(
    ("leading", "leader", "row"),
    [
        pytest.param(True, None, "this daemon", id="a single daemon"),
        pytest.param(True, "10.0.1.1:7070", "this daemon (10.0.1.1:7070)", id="the leader"),
        pytest.param(
            False, "10.0.1.1:7070", "10.0.1.1:7070 (this replica follows)", id="a follower"
        ),
        pytest.param(False, None, "none (this replica follows)", id="nobody leads"),
    ],
)
def test_stats_says_who_leads(
    serve: Any,
    capsys: pytest.CaptureFixture[str],
    leading: bool,
    leader: str | None,
    row: str,
) -> None:
    def replica(request: ClientMessage) -> Sequence[Outgoing]:
        (reply,) = stats_daemon(request)
        assert isinstance(reply, StatsReply)
        return [msgspec.structs.replace(reply, leading=leading, leader=leader)]

    server = serve(replica)
    assert podium("stats", "--server", server.address) == 0
    assert f"leader        {row}\n" in capsys.readouterr().out


def test_stats_json(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(stats_daemon)
    assert podium("stats", "-o", "json", "--server", server.address) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pending"] == {"active": 1, "backoff": 0, "unschedulable": 2}
    assert "msg" not in doc and "id" not in doc


def test_policy_reload(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        assert isinstance(request, ReloadPolicy)
        return [
            ReloadPolicyReply(
                id=request.id,
                predicates=["PodFitsResources", "PodToleratesNodeTaints"],
                priorities=[
                    PriorityWeight(name="LeastRequestedPriority", weight=1),
                    PriorityWeight(name="ImageLocalityPriority", weight=2),
                ],
                warnings=["the policy's extenders changed: they take effect after a restart"],
            )
        ]

    server = serve(handler)
    assert podium("policy", "reload", "--server", server.address) == 0
    out, err = capsys.readouterr()
    assert out == (
        "Predicates (in order):\n"
        "  PodFitsResources\n"
        "  PodToleratesNodeTaints\n"
        "Priorities:\n"
        "  LeastRequestedPriority   weight 1\n"
        "  ImageLocalityPriority    weight 2\n"
    )
    assert err == "warning: the policy's extenders changed: they take effect after a restart\n"


def test_policy_reload_refused(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        message = 'unknown predicate "Foo"; the old policy stays'
        return [
            ErrorReply(id=request.id, code="invalid", message=message, path="predicates[3].name")
        ]

    server = serve(handler)
    assert podium("policy", "reload", "--server", server.address) == 1
    assert capsys.readouterr().err == (
        'error: unknown predicate "Foo"; the old policy stays at predicates[3].name\n'
    )


def test_protocol_schema_prints_the_schema(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command imports the schema when it runs (building the parser does not).
    monkeypatch.setattr(schema, "protocol_schema", lambda: {"$defs": {"Hello": {"type": "object"}}})
    assert podium("protocol", "schema") == 0
    assert json.loads(capsys.readouterr().out) == {"$defs": {"Hello": {"type": "object"}}}


# --------------------------------------------------------------------------- parser, helpers


@pytest.mark.parametrize(
    "argv",
    [
        ("apply", "--help"),
        ("delete", "--help"),
        ("get", "--help"),
        ("watch", "--help"),
        ("explain", "--help"),
        ("stats", "--help"),
        ("policy", "reload", "--help"),
        ("protocol", "schema", "--help"),
    ],
    ids=" ".join,
)
def test_help_teaches_with_examples(
    argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        podium(*argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  podium " in out


@pytest.mark.parametrize(
    ("alias", "kind"),
    [
        ("pods", "Pod"),
        ("po", "Pod"),
        ("Pod", "Pod"),
        ("no", "Node"),
        ("pv", "PersistentVolume"),
        ("pvc", "PersistentVolumeClaim"),
        ("svc", "Service"),
        ("sc", "StorageClass"),
        ("rs", "ReplicaSet"),
        ("rc", "ReplicationController"),
        ("sts", "StatefulSet"),
        ("pc", "PriorityClass"),
        ("pdb", "PodDisruptionBudget"),
        ("pg", "PodGroup"),
        ("podgroups", "PodGroup"),
        ("podgroup", "PodGroup"),
        ("PodGroup", "PodGroup"),
        ("priorityclasses", "PriorityClass"),
        ("persistentvolumeclaim", "PersistentVolumeClaim"),
    ],
)
def test_resolve_kind(alias: str, kind: str) -> None:
    assert resolve_kind(alias) == kind


# Each threshold of k8s.io/apimachinery/pkg/util/duration.HumanDuration@v1.14, in seconds.
DURATION_CASES = [
    (-2, "<invalid>"),
    (-1, "0s"),
    (0, "0s"),
    (1, "1s"),
    (119, "119s"),
    (120, "2m"),
    (121, "2m1s"),
    (599, "9m59s"),
    (600, "10m"),
    (3 * 3600 - 1, "179m"),
    (3 * 3600, "3h"),
    (3 * 3600 + 60, "3h1m"),
    (8 * 3600 - 1, "7h59m"),
    (8 * 3600, "8h"),
    (48 * 3600 - 1, "47h"),
    (48 * 3600, "2d"),
    (48 * 3600 + 3600, "2d1h"),
    (8 * 86400 - 1, "7d23h"),
    (8 * 86400, "8d"),
    (2 * 365 * 86400 - 1, "729d"),
    (2 * 365 * 86400, "2y"),
    (2 * 365 * 86400 + 86400, "2y1d"),
    (8 * 365 * 86400, "8y"),
]


@pytest.mark.parametrize(("seconds", "want"), DURATION_CASES)
def test_human_duration(seconds: int, want: str) -> None:
    assert human_duration(seconds) == want


# --------------------------------------------------------------------------- pod groups


def pod_groups() -> list[o.KubeObject]:
    """Groups of the three forms in two namespaces, and pods naming them in any form."""
    return [
        stamped(make_pod_group("train").ns("ml").gang(3), THREE_MINUTES_AGO),
        stamped(make_pod_group("serve").ns("ml").basic(), FOUR_DAYS_AGO),
        stamped(
            make_pod_group("tf").ns("ml").min_member(2, "scheduling.volcano.sh/v1beta1"),
            THREE_MINUTES_AGO,
        ),
        stamped(make_pod_group("nginx").ns("web").min_member(4), THREE_MINUTES_AGO),
        make_pod("w0").ns("ml").group("train").obj(),
        make_pod("w1").ns("ml").group("train", "coscheduling").obj(),
        make_pod("w2").ns("ml").group("train", "volcano").node("n1").obj(),
        make_pod("t0").ns("ml").group("tf", "volcano").obj(),
        make_pod("lone").ns("ml").obj(),
        make_pod("n0").ns("web").group("nginx", "coscheduling").obj(),
    ]


@dataclass(frozen=True)
class GroupGet:
    name: str
    argv: tuple[str, ...]
    want: str
    pods_from: tuple[str | None, ...]  # the namespace of each list of the pods (None: all)


GROUP_GETS = [
    GroupGet(
        "a namespace's groups, each with its members in any form",
        ("get", "pg", "-n", "ml"),
        "NAME    POLICY   MIN-COUNT   MEMBERS   AGE\n"
        "serve   basic    <none>      0         4d\n"
        "tf      gang     2           1         3m\n"
        "train   gang     3           3         3m\n",
        ("ml",),
    ),
    GroupGet(
        "every namespace",
        ("get", "podgroups", "-A"),
        "NAMESPACE   NAME    POLICY   MIN-COUNT   MEMBERS   AGE\n"
        "ml          serve   basic    <none>      0         4d\n"
        "ml          tf      gang     2           1         3m\n"
        "ml          train   gang     3           3         3m\n"
        "web         nginx   gang     4           1         3m\n",
        (None,),
    ),
    GroupGet(
        "one, as apply names it",
        ("get", "podgroup/ml/train"),
        "NAME    POLICY   MIN-COUNT   MEMBERS   AGE\ntrain   gang     3           3         3m\n",
        ("ml",),
    ),
    GroupGet(
        "wide names the form",
        ("get", "pg", "nginx", "-n", "web", "-o", "wide"),
        "NAME    POLICY   MIN-COUNT   MEMBERS   AGE   API-VERSION\n"
        "nginx   gang     4           1         3m    scheduling.x-k8s.io/v1alpha1\n",
        ("web",),
    ),
    GroupGet("json lists no pods", ("get", "pg", "-n", "ml", "-o", "json"), "", ()),
]


class SortedDaemon(Daemon):
    """Lists sorted by (namespace, name), as the store answers."""

    def __call__(self, request: ClientMessage) -> Sequence[Outgoing]:
        replies = super().__call__(request)
        return [
            msgspec.structs.replace(
                r, items=sorted(r.items, key=lambda x: (x.metadata.namespace, x.metadata.name))
            )
            if isinstance(r, GetReply)
            else r
            for r in replies
        ]


@pytest.mark.parametrize("case", GROUP_GETS, ids=attrgetter("name"))
def test_get_pod_groups(serve: Any, capsys: pytest.CaptureFixture[str], case: GroupGet) -> None:
    server = serve(SortedDaemon(pod_groups()))
    assert podium(*case.argv, "--server", server.address) == 0
    out = capsys.readouterr().out
    if case.want:
        assert out == case.want
    else:
        assert [x["metadata"]["name"] for x in json.loads(out)["items"]] == [
            "serve",
            "tf",
            "train",
        ]
    gets = [r for r in server.requests if isinstance(r, Get)]
    assert gets[0].kind == "PodGroup"
    assert [(r.kind, r.namespace) for r in gets[1:]] == [("Pod", ns) for ns in case.pods_from]


def test_get_pod_groups_of_an_empty_namespace_lists_no_pods(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(SortedDaemon(pod_groups()))
    assert podium("get", "pg", "-n", "empty", "--server", server.address) == 0
    assert capsys.readouterr().err == "No resources found in empty namespace.\n"
    assert [r.kind for r in server.requests if isinstance(r, Get)] == ["PodGroup"]


def test_apply_and_delete_pod_groups(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(Daemon([]))
    path = write(
        tmp_path / "gang.yaml",
        [
            make_pod_group("train").ns("ml").gang(2).dict(),
            make_pod("w0").ns("ml").group("train").dict(),
        ],
    )
    assert podium("apply", "-f", path, "--server", server.address) == 0
    assert capsys.readouterr().out == "podgroup/ml/train created\npod/ml/w0 configured\n"
    for argv in (
        ("podgroup/ml/train",),
        ("pg", "train", "-n", "ml"),
        ("podgroups/train", "-n", "ml"),
        ("PodGroup/ml/train", "-n", "ml"),
    ):
        assert podium("delete", *argv, "--server", server.address) == 0
    assert podium("delete", "pod/web-1", "--server", server.address) == 0
    assert podium("delete", "node/n1", "--server", server.address) == 0
    assert capsys.readouterr().out == (
        "podgroup/ml/train deleted\n" * 4 + "pod/default/web-1 deleted\nnode/n1 deleted\n"
    )
    refs = [r.refs for r in server.requests if isinstance(r, Delete)]
    assert refs == [[ObjectRef(kind="PodGroup", name="train", namespace="ml")]] * 4 + [
        [ObjectRef(kind="Pod", name="web-1", namespace="default")],
        [ObjectRef(kind="Node", name="n1", namespace="")],
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("podgroup/ml/train/x",),
            "'podgroup/ml/train/x' is not KIND, KIND/NAME or KIND/NAMESPACE/NAME",
        ),
        (("podgroup//train",), "'podgroup//train' is not KIND, KIND/NAME or KIND/NAMESPACE/NAME"),
        (("podgroup/ml/train", "other"), "'podgroup/ml/train' names the object already"),
        (
            ("podgroup/ml/train", "-n", "web"),
            "'podgroup/ml/train' is in namespace ml, not web (-n)",
        ),
        (("node/x/n1",), "Node is cluster-scoped: give node/NAME, without a namespace"),
        (("deployment/web",), 'the server doesn\'t have a resource type "deployment"'),
        (("pg",), "give KIND NAME"),
    ],
    ids=lambda v: v if isinstance(v, str) else " ".join(v),
)
def test_a_bad_reference_is_a_usage_error(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert podium("delete", *argv) == 2
    assert message in capsys.readouterr().err
    if argv != ("pg",):
        assert podium("get", *argv) == 2
        assert message in capsys.readouterr().err


def test_resolve_ref() -> None:
    assert resolve_ref("pg", "train", "ml") == ("PodGroup", "train", "ml")
    assert resolve_ref("pg/train", None, None) == ("PodGroup", "train", None)
    assert resolve_ref("pg/ml/train", None, None) == ("PodGroup", "train", "ml")
    assert resolve_ref("po", None, None) == ("Pod", None, None)


def test_get_pod_groups_watch_leaves_members_out(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    group = make_pod_group("train").ns("ml")

    def handler(request: ClientMessage) -> Sequence[Outgoing]:
        if isinstance(request, Get):
            assert (request.kind, request.namespace) == ("PodGroup", "ml")
            return [GetReply(id=request.id, revision=40, items=[group.gang(2).obj()])]
        assert isinstance(request, Watch)
        assert request.kinds == ["PodGroup"]
        i = request.id
        return [
            WatchReply(id=i, revision=40),
            _ev(
                i,
                41,
                "Deleted",
                kind="PodGroup",
                namespace="ml",
                name="train",
                object=group.gang(2).obj(),
            ),
            msgspec.structs.replace(DAMAGED, id=i),
        ]

    server = serve(handler)
    assert podium("get", "pg", "-n", "ml", "-w", "--server", server.address) == 1
    assert capsys.readouterr().out == (
        "NAME    POLICY   MIN-COUNT   AGE\n"
        "train   gang     2           <unknown>\n"
        "train   gang     2           <unknown>\n"
    )


def test_watch_takes_kinds_as_words_too(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = serve(watch_daemon(DAMAGED))
    assert podium("watch", "pg", "podgroups", "--kind", "po", "--server", server.address) == 1
    watches = [r for r in server.requests if isinstance(r, Watch)]
    assert watches[0].kinds == ["PodGroup", "Pod"]  # each once
    assert podium("watch", "deployments") == 2
    assert 'doesn\'t have a resource type "deployments"' in capsys.readouterr().err
