"""``podium simulate`` as a user runs it over the example cluster: a real subprocess where the
process is what is tested (standard input, usage errors' exit code 2), else the same command in
this process (tests/support/cli_runner.py: the output is what is tested, and a subprocess costs
0.5-1 s of start-up a command).

The golden files pin Podium's decisions on examples/: a change to a predicate, a priority, the
node order or the tie-break shows up here as a diff to review. Regenerate them deliberately
with ``PODIUM_UPDATE_GOLDEN=1 pytest tests/e2e/test_simulate_cli.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_podium

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "fixtures" / "golden"


def podium(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``podium ARGS`` in this process."""
    return run_podium(*args, stdin=stdin, cwd=ROOT)


def podium_process(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``podium ARGS`` as a real process (``python -m podium.cli.main``)."""
    return subprocess.run(
        [sys.executable, "-m", "podium.cli.main", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _golden(name: str, got: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PODIUM_UPDATE_GOLDEN") == "1":
        path.write_text(got)
    assert path.exists(), f"missing golden file {path}; run with PODIUM_UPDATE_GOLDEN=1"
    assert json.loads(got) == json.loads(path.read_text())


@pytest.mark.parametrize(
    ("golden", "extra"),
    [("simulate-examples.json", []), ("simulate-examples-explain.json", ["--explain"])],
)
def test_simulate_examples_matches_golden(golden: str, extra: list[str]) -> None:
    proc = podium(
        "simulate", "-f", str(EXAMPLES / "cluster.yaml"), "-o", "json", "--seed", "1", *extra
    )
    assert proc.returncode == 0, proc.stderr
    _golden(golden, proc.stdout)


def _check_shape(doc: Any, *, explain: bool) -> None:
    assert set(doc) == {"pods", "skipped"}
    assert doc["skipped"] == {}
    for pod in doc["pods"]:
        keys = {"namespace", "name", "node", "message", "attempts"} | (
            {"nodes"} if explain else set()
        )
        assert set(pod) == keys
        assert isinstance(pod["namespace"], str) and isinstance(pod["name"], str)
        assert (pod["node"] is None) != (pod["message"] is None)
        assert isinstance(pod["attempts"], int) and pod["attempts"] >= 1
        if not explain:
            continue
        for entry in pod["nodes"].values():
            assert set(entry) == {"fits", "reasons", "scores", "total"}
            if entry["fits"]:
                assert entry["reasons"] == [] and isinstance(entry["total"], int)
                assert all(0 <= s <= 10 for s in entry["scores"].values())
            else:
                assert entry["reasons"] and entry["scores"] == {} and entry["total"] is None
        if pod["node"] is not None:
            best = max(e["total"] for e in pod["nodes"].values() if e["fits"])
            assert pod["nodes"][pod["node"]]["total"] == best


@pytest.mark.parametrize("explain", [False, True])
def test_json_shape_is_exactly_the_documented_one(explain: bool) -> None:
    extra = ["--explain"] if explain else []
    proc = podium("simulate", "-f", str(EXAMPLES / "cluster.yaml"), "-o", "json", *extra)
    assert proc.returncode == 0, proc.stderr
    _check_shape(json.loads(proc.stdout), explain=explain)


def test_both_seed_policies_give_identical_placements() -> None:
    runs = [
        podium(
            "simulate",
            "-f",
            str(EXAMPLES / "cluster.yaml"),
            "-o",
            "json",
            "--seed",
            "3",
            "--policy",
            str(EXAMPLES / p),
        )
        for p in ("policy-seed-000.json", "policy-seed-004.json")
    ]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
    first, second = (json.loads(p.stdout) for p in runs)
    assert first == second
    assert any(pod["node"] is None for pod in first["pods"])


def test_table_output_lists_every_pod_and_a_summary() -> None:
    proc = podium("simulate", "-f", str(EXAMPLES / "cluster.yaml"), "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "NODE", "ATTEMPTS", "REASON"]
    assert "0/10 nodes are available:" in proc.stdout
    assert any(line.endswith("of 18 pending pods") for line in lines)
    assert any(line.startswith("POOL") for line in lines)


def test_stdin_and_a_kind_list_load_as_kubectl_prints_them() -> None:
    dump = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "kind": "Node",
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "1", "pods": "10"}},
            },
            {
                "kind": "Pod",
                "metadata": {"name": "small"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
            },
            {
                "kind": "Pod",
                "metadata": {"name": "big"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
            },
        ],
        "metadata": {"resourceVersion": ""},
    }
    proc = podium_process("simulate", "-f", "-", "-o", "json", stdin=json.dumps(dump))
    assert proc.returncode == 0, proc.stderr
    pods = {p["name"]: p for p in json.loads(proc.stdout)["pods"]}
    assert pods["small"]["node"] == "n1"
    assert pods["big"]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_bad_input_fails_naming_file_object_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: lots}}\n"
    )
    proc = podium("simulate", "-f", str(bad))
    assert proc.returncode == 1
    assert str(bad) in proc.stderr
    assert "Pod" in proc.stderr and "default/p" in proc.stderr
    assert "$.spec.containers[0].resources.requests" in proc.stderr


def test_unknown_policy_name_is_an_error_naming_the_entry(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps(
            {
                "kind": "Policy",
                "predicates": [{"name": "PodFitsResources"}, {"name": "NoSuchThing"}],
            }
        )
    )
    proc = podium("simulate", "-f", str(EXAMPLES / "cluster.yaml"), "--policy", str(policy))
    assert proc.returncode == 1
    assert "predicates[1].name" in proc.stderr


def test_usage_errors_exit_2() -> None:
    assert podium_process("simulate").returncode == 2
    assert podium_process("no-such-command").returncode == 2
    # The same in this process (argparse's SystemExit is its exit code).
    assert podium("simulate").returncode == 2


def test_a_later_config_version_says_which_version_podium_reads(tmp_path: Path) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n"
    )
    proc = podium("simulate", "-f", str(EXAMPLES / "cluster.yaml"), "--config", str(config))
    assert proc.returncode == 1
    assert "got 'kubescheduler.config.k8s.io/v1beta3'" in proc.stderr
    assert "Write apiVersion: kubescheduler.config.k8s.io/v1alpha1" in proc.stderr
    assert "unknown key" not in proc.stderr


def test_explain_in_table_form_prints_every_pods_verdicts() -> None:
    args = ("simulate", "-f", str(EXAMPLES / "cluster.yaml"), "--seed", "1", "--explain")
    as_table, as_json = podium(*args), podium(*args, "-o", "json")
    assert as_table.returncode == 0, as_table.stderr
    doc = json.loads(as_json.stdout)
    blocks = as_table.stdout.split("\n\n")
    for pod in doc["pods"]:
        where = f"on {pod['node']}" if pod["node"] is not None else "unschedulable"
        heading = f"{pod['namespace']}/{pod['name']} ({where}):"
        (block,) = [b for b in blocks if b.startswith(heading + "\n")]
        lines = block.splitlines()
        assert lines[1].split() == ["NODE", "FITS", "REASONS", "TOTAL"]
        rows = [line.split(maxsplit=2) for line in lines[2:]]
        assert [row[0] for row in rows] == list(pod["nodes"])
        for (_, fits, rest), verdict in zip(rows, pod["nodes"].values(), strict=True):
            assert fits == ("yes" if verdict["fits"] else "no")
            total = "-" if verdict["total"] is None else str(verdict["total"])
            assert rest.endswith(total)
            assert rest.removesuffix(total).strip() == (", ".join(verdict["reasons"]) or "-")


def test_without_explain_the_table_has_no_verdicts() -> None:
    proc = podium("simulate", "-f", str(EXAMPLES / "cluster.yaml"), "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    assert "FITS" not in proc.stdout


def _volume_cluster(ebs_limit: int) -> str:
    """A node taking ``ebs_limit`` EBS volumes, holding a pod with one; a pending pod whose
    claim is bound to a PersistentVolume that is missing from the dump."""
    return f"""\
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-1-17.ec2.internal
  labels: {{kubernetes.io/hostname: ip-10-0-1-17.ec2.internal}}
status:
  allocatable: {{cpu: "2", memory: 8Gi, pods: "110", attachable-volumes-aws-ebs: "{ebs_limit}"}}
  conditions: [{{type: Ready, status: "True"}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: cache-0, namespace: default}}
spec:
  nodeName: ip-10-0-1-17.ec2.internal
  containers: [{{name: redis, image: redis:7}}]
  volumes:
  - name: data
    awsElasticBlockStore: {{volumeID: vol-0a1b2c3d4e5f60001, fsType: ext4}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-db-0
  namespace: default
  annotations: {{pv.kubernetes.io/bind-completed: "yes"}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 10Gi}}}}
  volumeName: pvc-5f0c1d2e-0000-4000-8000-000000000001
status: {{phase: Bound}}
---
apiVersion: v1
kind: Pod
metadata: {{name: db-0, namespace: default}}
spec:
  containers: [{{name: postgres, image: postgres:16}}]
  volumes:
  - name: data
    persistentVolumeClaim: {{claimName: data-db-0}}
"""


@pytest.mark.parametrize(
    ("ebs_limit", "node", "message"),
    [
        (2, "ip-10-0-1-17.ec2.internal", None),
        (
            1,
            None,
            "0/1 nodes are available: 1 node(s) exceed max volume count. preemption: 0/1 nodes "
            "are available: 1 No preemption victims found for incoming pod.",
        ),
    ],
)
def test_a_claim_whose_volume_is_missing_counts_as_one_volume(
    tmp_path: Path, ebs_limit: int, node: str | None, message: str | None
) -> None:
    # v1.14 filterVolumes: a claim that cannot be resolved to its volume counts as one unique
    # volume of the predicate's kind, and the attempt goes on (no "could not find" error).
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"kind": "Policy", "predicates": [{"name": "MaxEBSVolumeCount"}]}))
    proc = podium(
        "simulate", "-f", "-", "--policy", str(policy), "-o", "json",
        stdin=_volume_cluster(ebs_limit),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (pod,) = json.loads(proc.stdout)["pods"]
    assert (pod["name"], pod["node"], pod["message"]) == ("db-0", node, message)
