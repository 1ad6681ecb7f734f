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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest
from daemon import Daemon, StartDaemon

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real-shaped"
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
PODIUM = str(Path(sys.executable).with_name("podium"))


def podium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PODIUM, *args], cwd=REAL, capture_output=True, text=True, timeout=120, check=False
    )


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


# --------------------------------------------------------------------------- issue 26

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


def test_client_go_files_without_kind_apply_with_one_warning_each(daemon: Daemon) -> None:
    files = ["node_edge-7.json", "pod_telemetry_collector-0.json"]
    args = [a for f in files for a in ("-f", str(CLIENT_GO / f))]
    proc = daemon.cli("apply", *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "node/edge-7 created\npod/telemetry/collector-0 created\n"
    assert proc.stderr == (
        f"warning: {CLIENT_GO / files[0]}: object 0 (edge-7) has no kind; read as a Node for its "
        "status.nodeInfo (add `kind: Node` and `apiVersion: v1` to say so)\n"
        f"warning: {CLIENT_GO / files[1]}: object 0 (telemetry/collector-0) has no kind; read as "
        "a Pod for its spec.containers (add `kind: Pod` and `apiVersion: v1` to say so)\n"
    )


def test_a_client_go_file_whose_kind_cannot_be_told_sends_nothing_and_says_how_to_fix_it(
    daemon: Daemon,
) -> None:
    path = CLIENT_GO / "secret_telemetry_token.json"
    proc = daemon.cli("apply", "-f", str(path))
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
    for path in files:  # "apply every rendered file", as a shell loop does
        proc = daemon.cli("apply", "-f", str(path))
        assert proc.returncode == 0, (path, proc.stderr)
        said = proc.stderr.splitlines()
        assert all(line.startswith(("warning: ", "skipped ")) for line in said), said
