"""Real-shaped files, as a user feeds them to ``podium simulate`` and ``podium apply`` (issue 15).

The fixtures under tests/fixtures/real-shaped are written from the Kubernetes API reference in
the shapes real tools print: ``kubectl get nodes,all,events -A -o json`` (a ``kind: List`` with
Deployments, ReplicaSets, DaemonSets, Jobs, CronJobs, Services, Pods and Events), ``kubectl
cluster-info dump --output-directory`` (one typed list per kind and namespace, its items without
``kind``), Helm-rendered YAML (``key:`` left empty, ``null`` in label maps) and a multi-document
manifest of 32 objects of 30 kinds. Each loads unedited: the kinds the scheduler does not use
are skipped with one summary line on stderr, the rest are placed. The golden files pin the
placements (table and JSON); regenerate them deliberately with
``PODIUM_UPDATE_GOLDEN=1 pytest tests/e2e/test_real_shaped.py`` and read the diff.

``podium simulate`` runs in this process (tests/support/cli_runner.py: these tests are about its
output; test_simulate_cli.py runs it as a process); ``podium apply`` runs as a process against
a real daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import msgspec
import pytest
import trio
from cli_runner import run_podium
from daemon import Daemon, StartDaemon

from podium.protocol import objects as o
from podium.protocol.client import connect

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real-shaped"
GOLDEN = ROOT / "tests" / "fixtures" / "golden"


def podium(*args: str) -> subprocess.CompletedProcess[str]:
    """``podium ARGS`` in this process, in the fixtures' folder."""
    return run_podium(*args, cwd=REAL)


@dataclass(frozen=True)
class Case:
    name: str
    files: tuple[str, ...]
    skipped: dict[str, int]
    objects: int  # what apply stores


DUMP = (
    "cluster-info-dump/nodes.json",
    "cluster-info-dump/default/events.json",
    "cluster-info-dump/default/pods.json",
    "cluster-info-dump/default/replicationcontrollers.json",
    "cluster-info-dump/kube-system/daemonsets.json",
    "cluster-info-dump/kube-system/deployments.json",
    "cluster-info-dump/kube-system/events.json",
    "cluster-info-dump/kube-system/pods.json",
    "cluster-info-dump/kube-system/replicasets.json",
)

CASES = [
    Case(
        "kubectl-get-all",
        ("kubectl-get-all.json",),
        {"Event": 4, "Deployment": 2, "CronJob": 1, "DaemonSet": 1, "Job": 1},
        3 + 3 + 2 + 5 + 1 + 3 + 2,
    ),
    Case(
        "cluster-info-dump",
        DUMP,
        {"DaemonSet": 1, "Deployment": 1, "Event": 1},
        2 + 3 + 2 + 2 + 1,
    ),
    Case(
        "helm-rendered",
        ("helm-rendered.yaml",),
        {"ConfigMap": 1, "Deployment": 1, "ServiceAccount": 1},
        2 + 1 + 1 + 1 + 4,
    ),
    Case(
        "mixed-kinds",
        ("mixed-kinds.yaml",),
        dict.fromkeys(
            sorted(
                [
                    "Backup",
                    "ClusterRole",
                    "ClusterRoleBinding",
                    "ConfigMap",
                    "CronJob",
                    "CustomResourceDefinition",
                    "DaemonSet",
                    "Deployment",
                    "EndpointSlice",
                    "Endpoints",
                    "HorizontalPodAutoscaler",
                    "Ingress",
                    "Job",
                    "LimitRange",
                    "Namespace",
                    "NetworkPolicy",
                    "ResourceQuota",
                    "Role",
                    "RoleBinding",
                    "Secret",
                    "ServiceAccount",
                ]
            ),
            1,
        ),
        11,
    ),
]


def _skipped_line(skipped: dict[str, int]) -> str:
    counts = ", ".join(f"{kind} {n}" for kind, n in skipped.items())
    total = sum(skipped.values())
    return f"skipped {total} objects of {len(skipped)} kinds Podium does not schedule: {counts}\n"


def _args(case: Case) -> list[str]:
    return [arg for f in case.files for arg in ("-f", f)]


def _golden(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PODIUM_UPDATE_GOLDEN") == "1":
        path.write_text(got)
    assert path.exists(), f"missing golden file {path}; run with PODIUM_UPDATE_GOLDEN=1"
    assert got == path.read_text()


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_simulate_places_a_real_shaped_file_and_says_what_it_skipped(case: Case) -> None:
    proc = podium("simulate", *_args(case), "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == _skipped_line(case.skipped)
    _golden(f"simulate-{case.name}.txt", proc.stdout)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_simulate_json_counts_the_skipped_kinds(case: Case) -> None:
    proc = podium("simulate", *_args(case), "--seed", "1", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert list(doc["skipped"].items()) == list(case.skipped.items())  # ordered as the line
    _golden(f"simulate-{case.name}.json", proc.stdout)


def test_simulate_strict_refuses_each_unknown_kind_naming_file_object_and_kind() -> None:
    proc = podium("simulate", "-f", "helm-rendered.yaml", "--strict")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == "error: 3 objects could not be loaded:"
    assert [line.split(": unknown kind")[0] for line in lines[1:]] == [
        "  helm-rendered.yaml: object 2 (ServiceAccount shop/shop) at $.kind",
        "  helm-rendered.yaml: object 3 (ConfigMap shop/shop-config) at $.kind",
        "  helm-rendered.yaml: object 5 (Deployment shop/shop) at $.kind",
    ]
    assert proc.stdout == ""


def test_simulate_names_the_file_and_object_a_pod_fails_admission_in(tmp_path: Path) -> None:
    dump = tmp_path / "dump.yaml"
    dump.write_text(
        "kind: ConfigMap\nmetadata: {name: c, namespace: shop}\n---\n"
        "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', pods: '10'}}\n---\n"
        "kind: Pod\nmetadata: {name: web, namespace: shop}\n"
        "spec: {priorityClassName: gold, containers: [{name: c}]}\n"
    )
    proc = podium("simulate", "-f", "kubectl-get-all.json", "-f", str(dump))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"error: {dump}: object 2 (Pod shop/web) at $.spec.priorityClassName: "
        "no PriorityClass with name gold was found"
    )


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_apply_stores_what_podium_schedules_and_says_what_it_skipped(
    case: Case, start_daemon: StartDaemon
) -> None:
    daemon = start_daemon()
    with_paths = [arg if arg == "-f" else str(REAL / arg) for arg in _args(case)]
    proc = daemon.cli("apply", *with_paths)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == _skipped_line(case.skipped)
    lines = proc.stdout.splitlines()
    assert len(lines) == case.objects
    assert all(line.endswith(" created") for line in lines)
    # Applied again as JSON: the same objects, the same skipped kinds, counted.
    again = daemon.cli("apply", *with_paths, "-o", "json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert len(doc["objects"]) == case.objects
    assert list(doc["skipped"].items()) == list(case.skipped.items())
    # Whatever the scheduler wrote meanwhile, the dump's old status does not overwrite it
    # (issue 26): every object is unchanged.
    assert {o["action"] for o in doc["objects"]} == {"unchanged"}, again.stdout


# --------------------------------------------------------------------------- issue 26

STATUS_DUMP = REAL / "kubectl-get-o-yaml-status.yaml"
"""``kubectl get nodes,sc,pv,pvc,pods -A -o yaml`` of a cluster whose pending pods carry the
old cluster's PodScheduled condition (one with a nomination, one with a bare ``False`` as
popeye's test data has it), a claim ``Pending`` and a volume ``Available``."""
PLACED = {
    "shop/web-6d4cf56db6-2xk9p",
    "shop/web-6d4cf56db6-q8t7m",
    "shop/cache-0",
    "default/legacy",
}
HOPELESS = "batch/train-0"  # asks 16 cpus of 4-cpu nodes: its message never changes


def _scheduled(pod: o.Pod) -> tuple[str, str, str] | None:
    for c in pod.status.conditions:
        if c.type == "PodScheduled":
            return (c.status, c.reason, c.message)
    return None


async def _settled(daemon: Daemon) -> str:
    """Wait until Podium bound every placeable pod of the dump and recorded its own message
    for the hopeless one, and its queues are idle; returns that message."""
    bound: set[str] = set()
    message = ""
    async with connect(daemon.address) as client:
        async with client.watch(0, kinds=["Pod"]) as events:
            async for ev in events:
                key = f"{ev.namespace}/{ev.name}"
                if ev.type == "Bound":
                    bound.add(key)
                elif ev.type == "Unschedulable" and key == HOPELESS:
                    message = ev.message
                if bound == PLACED and message:
                    break
        while True:
            stats = await client.stats()
            if (stats.pending.active, stats.pending.backoff, stats.assumed) == (0, 0, 0):
                return message
            await trio.sleep(0.05)


async def test_a_dump_applied_again_after_podium_acted_changes_nothing(
    start_daemon: StartDaemon,
) -> None:
    """Issue 26: the second ``podium apply`` of what ``kubectl get -o yaml`` printed answers
    ``unchanged`` for every object once Podium bound, recorded and nominated; the revision does
    not move, no event is sent, and the pods keep what Podium wrote."""
    daemon = start_daemon()
    with trio.fail_after(90):
        first = await trio.to_thread.run_sync(lambda: daemon.cli("apply", "-f", str(STATUS_DUMP)))
        assert first.returncode == 0, first.stderr
        assert all(line.endswith(" created") for line in first.stdout.splitlines())
        message = await _settled(daemon)
        async with connect(daemon.address) as client:
            before = await client.get("Pod")
            claim = (await client.get("PersistentVolumeClaim", namespace="shop")).items
            second = await trio.to_thread.run_sync(
                lambda: daemon.cli("apply", "-f", str(STATUS_DUMP), "-o", "json")
            )
            assert second.returncode == 0, second.stderr
            doc = json.loads(second.stdout)
            assert doc["revision"] == before.revision
            assert [(s["kind"], s["name"], s["action"]) for s in doc["objects"]] == [
                (s["kind"], s["name"], "unchanged") for s in doc["objects"]
            ]
            assert len(doc["objects"]) == len(first.stdout.splitlines())
            again = await trio.to_thread.run_sync(
                lambda: daemon.cli("apply", "-f", str(STATUS_DUMP))
            )
            assert again.stdout.splitlines() == [
                line.replace(" created", " unchanged") for line in first.stdout.splitlines()
            ]
            after = await client.get("Pod")
            assert after.revision == before.revision
            assert after.items == before.items
            assert (await client.get("PersistentVolumeClaim", namespace="shop")).items == claim

            pods = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in after.items}
            for key in PLACED:
                pod = pods[key]
                assert isinstance(pod, o.Pod)
                assert pod.spec.node_name, key
                assert _scheduled(pod) == ("True", "", ""), key
                assert pod.status.phase == "Pending", key  # the dump's: no kubelet here
            train = pods[HOPELESS]
            assert isinstance(train, o.Pod)
            assert _scheduled(train) == ("False", "Unschedulable", message)
            nominated = pods["shop/web-6d4cf56db6-q8t7m"]
            assert isinstance(nominated, o.Pod)
            assert nominated.status.nominated_node_name == "worker-2"  # kept from the create
            [pvc] = claim
            assert isinstance(pvc, o.PersistentVolumeClaim)
            assert (pvc.spec.volume_name, pvc.status.phase) == ("local-pv-worker-1", "Bound")

            # Nothing of the two applies reached a watcher: the next event is the sentinel's.
            sentinel = msgspec.convert(
                {"kind": "PriorityClass", "metadata": {"name": "sentinel"}, "value": 1},
                o.PriorityClass,
            )
            await client.put([sentinel])
            async with client.watch(before.revision) as events:
                async for ev in events:
                    assert (ev.kind, ev.name) == ("PriorityClass", "sentinel"), ev
                    break


CLIENT_GO = REAL / "client-go"
# The shared real files (issue 26), beside the checkout or a worktree's parent: not copied here.
TURN3 = next(
    (
        p / "shared" / "real-clusters" / "turn3"
        for p in ROOT.parents
        if (p / "shared" / "real-clusters" / "turn3").is_dir()
    ),
    None,
)


def test_client_go_files_without_kind_apply_with_one_warning_each(shared_daemon: Daemon) -> None:
    """On the module's shared daemon (the other test on it sends nothing)."""
    files = ["node_edge-7.json", "pod_telemetry_collector-0.json"]
    args = [a for f in files for a in ("-f", str(CLIENT_GO / f))]
    proc = shared_daemon.cli("apply", *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "node/edge-7 created\npod/telemetry/collector-0 created\n"
    assert proc.stderr == (
        f"warning: {CLIENT_GO / files[0]}: object 0 (edge-7) has no kind; read as a Node for its "
        "status.nodeInfo (add `kind: Node` and `apiVersion: v1` to say so)\n"
        f"warning: {CLIENT_GO / files[1]}: object 0 (telemetry/collector-0) has no kind; read as "
        "a Pod for its spec.containers (add `kind: Pod` and `apiVersion: v1` to say so)\n"
    )


def test_a_client_go_file_whose_kind_cannot_be_told_sends_nothing_and_says_how_to_fix_it(
    shared_daemon: Daemon,
) -> None:
    path = CLIENT_GO / "secret_telemetry_token.json"
    proc = shared_daemon.cli("apply", "-f", str(path))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"error: {path}: object 0 (telemetry/collector-token) at $.kind: missing kind: add "
        "`kind:` and `apiVersion:` (e.g. `kind: Pod` and `apiVersion: v1`)\n"
        "error: nothing was sent\n"
    )


@pytest.mark.skipif(TURN3 is None, reason="the shared real files are not here")
def test_every_shared_real_file_applies_unedited_one_by_one(daemon: Daemon) -> None:
    assert TURN3 is not None
    files = sorted(p for p in TURN3.rglob("*") if p.suffix in (".json", ".yaml"))
    assert files
    for i, path in enumerate(files):  # "apply every rendered file", as a shell loop does
        # The first as a process, the rest in this process (the same command, without 0.5-1 s
        # of start-up each: what is tested is what apply says of each file).
        args = ("apply", "-f", str(path))
        proc = daemon.cli(*args) if i == 0 else run_podium(*args, "--server", daemon.address)
        assert proc.returncode == 0, (path, proc.stderr)
        said = proc.stderr.splitlines()
        assert all(line.startswith(("warning: ", "skipped ")) for line in said), said


# --------------------------------------------------------------------------- pod groups (issue 24)

POD_GROUPS = REAL / "pod-groups"
"""A PodGroup file of each form (tests/fixtures/real-shaped/pod-groups/README.md); every group
fits its file's nodes whole."""
GROUP_FILES = [
    ("kubernetes-v1alpha2.json", (), {"Job": 1}),
    ("coscheduling.yaml", (), {}),
    ("volcano-vcjob.yaml", ("--scheduler-name", "volcano"), {"Job": 1}),
]


@pytest.mark.parametrize(("file", "extra", "skipped"), GROUP_FILES, ids=lambda v: str(v))
def test_simulate_reads_pod_groups_and_places_their_members(
    file: str, extra: tuple[str, ...], skipped: dict[str, int]
) -> None:
    proc = podium("simulate", "-f", str(POD_GROUPS / file), *extra, "--seed", "1", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["skipped"] == skipped
    assert doc["pods"] and all(p["node"] for p in doc["pods"]), doc["pods"]


def test_apply_get_and_delete_pod_groups_of_every_form(daemon: Daemon) -> None:
    files = [a for f, _, _ in GROUP_FILES for a in ("-f", str(POD_GROUPS / f))]
    first = daemon.cli("apply", *files)
    assert first.returncode == 0, first.stderr
    created = [line for line in first.stdout.splitlines() if line.startswith("podgroup/")]
    assert created == [
        "podgroup/ml/eval created",
        "podgroup/ml/train created",
        "podgroup/default/nginx created",
        "podgroup/batch/spark-pi created",
        "podgroup/ml/tf-mnist-5f0c9a7e-3b1d-4c58-9a2e-7d41c0b6e2f3 created",
    ]
    listed = daemon.cli("get", "pg", "-A")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[:5] for line in listed.stdout.splitlines()]
    assert rows == [
        ["NAMESPACE", "NAME", "POLICY", "MIN-COUNT", "MEMBERS"],
        ["batch", "spark-pi", "gang", "2", "2"],
        ["default", "nginx", "gang", "3", "3"],
        ["ml", "eval", "basic", "<none>", "2"],
        ["ml", "tf-mnist-5f0c9a7e-3b1d-4c58-9a2e-7d41c0b6e2f3", "gang", "3", "3"],
        ["ml", "train", "gang", "4", "4"],
    ]
    # Applied again, once the scheduler bound what it could: nothing changes.
    again = daemon.cli("apply", *files, "-o", "json")
    assert again.returncode == 0, again.stderr
    assert {o["action"] for o in json.loads(again.stdout)["objects"]} == {"unchanged"}
    one = daemon.cli("get", "podgroup/ml/train", "-o", "json")
    assert one.returncode == 0, one.stderr
    doc = json.loads(one.stdout)
    assert (doc["apiVersion"], doc["kind"], doc["spec"]) == (
        "scheduling.k8s.io/v1alpha2",
        "PodGroup",
        {"schedulingPolicy": {"gang": {"minCount": 4}}},
    )
    gone = daemon.cli("delete", "podgroup/ml/train")
    assert (gone.returncode, gone.stdout) == (0, "podgroup/ml/train deleted\n"), gone.stderr
    after = [line.split()[:2] for line in daemon.cli("get", "pg", "-n", "ml").stdout.splitlines()]
    assert after == [
        ["NAME", "POLICY"],
        ["eval", "basic"],
        ["tf-mnist-5f0c9a7e-3b1d-4c58-9a2e-7d41c0b6e2f3", "gang"],
    ]
