"""``podium simulate`` marks pod groups (issue 24 point 6): a GROUP column and ``group``,
``group_outcome`` fields for members only, a ``groups`` summary, and ``--explain`` explaining
each group not placed as ``podium explain podgroup/...`` does. Run in process on a small
cluster written to a temporary file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from podium.cli.main import build_parser

NODE = {"cpu": "2", "memory": "8Gi", "pods": "110"}


def _pod(name: str, ns: str, cpu: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec},
    }


def _group(name: str, min_count: int | None) -> dict[str, object]:
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"schedulingPolicy": policy},
    }


def _member(name: str, group: str, cpu: str = "1", **spec: object) -> dict[str, object]:
    return _pod(name, "ml", cpu, schedulingGroup={"podGroupName": group}, **spec)


CLUSTER = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "low"},
        "value": 10,
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    },
    *(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n},
            "status": {"capacity": NODE, "allocatable": NODE},
        }
        for n in ("n0", "n1")
    ),
    # big: two members of 2 CPU, placed once the two low pods are evicted.
    _group("big", 2),
    _member("b0", "big", "2", priorityClassName="high"),
    _member("b1", "big", "2", priorityClassName="high"),
    _pod("v0", "batch", "1", nodeName="n0", priorityClassName="low"),
    _pod("v1", "batch", "1", nodeName="n1", priorityClassName="low"),
    # train: three of 3 CPU, never (no node has 3 CPU).
    _group("train", 3),
    *(_member(f"w{i}", "train", "3") for i in range(3)),
    # wait: one pod of four.
    _group("wait", 4),
    _member("x0", "wait"),
    # web: basic, its pod an ordinary pod.
    _group("web", None),
    _member("p0", "web", "100m"),
]


def _simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(CLUSTER))
    args = build_parser().parse_args(["simulate", "-f", str(path), "--seed", "1", *argv])
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_the_table_has_a_group_column_with_each_groups_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _simulate(tmp_path, capsys)
    lines = text.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "NODE", "ATTEMPTS", "GROUP", "REASON"]
    rows = {line.split()[1]: line for line in lines[1:] if line.startswith("ml ")}
    assert "ml/big (placed)" in rows["b0"] and "preempted batch/v0" in rows["b0"]
    assert "ml/train (not placed)" in rows["w0"]
    assert "ml/wait (waiting)" in rows["x0"]
    assert "ml/web (basic)" in rows["p0"]
    assert "4 pod groups: 1 placed, 1 not placed, 1 waiting, 1 basic\n" in text
    # Without --explain, no group is explained.
    assert "PodGroup:" not in text


def test_explain_explains_each_group_not_placed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _simulate(tmp_path, capsys, "--explain")
    train = text[text.index("PodGroup:  ml/train") :]
    assert train.startswith(
        "PodGroup:  ml/train\n"
        "Policy:    gang, minCount 3 (0 bound)\n"
        "Placed:    no: 0 of 3 members fit, 3 needed\n"
        "Message:   pod group ml/train: 0 of 3 members fit, minCount 3; ml/w0: "
    )
    assert "Blocked:   ml/w0, ml/w1, ml/w2\n" in train
    assert (
        "\nml/w0:\nHints:\n  no node can ever hold it: it asks 1 more cpu than the largest" in train
    )
    assert (
        "PodGroup:  ml/wait\nPolicy:    gang, minCount 4 (0 bound)\n"
        "Placed:    no: waiting for pod group ml/wait: 1 of 4 pods exist\n"
    ) in text
    assert "PodGroup:  ml/big" not in text and "PodGroup:  ml/web" not in text


def test_json_marks_members_only_and_sums_up_the_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(_simulate(tmp_path, capsys, "-o", "json", "--explain"))
    marks = {p["name"]: (p.get("group"), p.get("group_outcome")) for p in doc["pods"]}
    assert marks == {
        "b0": ("ml/big", "placed"),
        "b1": ("ml/big", "placed"),
        "w0": ("ml/train", "not placed"),
        "w1": ("ml/train", "not placed"),
        "w2": ("ml/train", "not placed"),
        "x0": ("ml/wait", "waiting"),
        "p0": ("ml/web", "basic"),
    }
    groups = {g["group"]: g for g in doc["groups"]}
    assert {k: g["outcome"] for k, g in groups.items()} == {
        "ml/big": "placed",
        "ml/train": "not placed",
        "ml/wait": "waiting",
        "ml/web": "basic",
    }
    train = groups["ml/train"]
    assert (train["min_count"], train["needed"], train["fit"], train["blocking"]) == (
        3,
        3,
        0,
        ["ml/w0", "ml/w1", "ml/w2"],
    )
    assert train["hints"]["ml/w0"] == [
        {"resource": "cpu", "missing": "1", "nodes": 2, "is_beyond_every_node": True}
    ]
    assert groups["ml/big"]["preempted"] == ["batch/v0", "batch/v1"]
    assert groups["ml/web"]["policy"] == "basic" and groups["ml/web"]["min_count"] is None


def test_without_explain_a_groups_json_entry_says_how_it_ended_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(_simulate(tmp_path, capsys, "-o", "json"))
    assert set(doc["groups"][0]) == {
        "group",
        "policy",
        "min_count",
        "bound",
        "needed",
        "fit",
        "outcome",
    }


def test_explain_names_each_members_group_and_what_blocks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under each member's ``--explain`` block, its group's verdict (a basic group's pod and
    a pod of no group get none); in JSON the group's message and blockers on each member."""
    text = _simulate(tmp_path, capsys, "--explain")
    w1 = text[text.index("ml/w1 (unschedulable):\n") :]
    assert w1.startswith(
        "ml/w1 (unschedulable):\nGroup:     ml/train (not placed; blocked by ml/w0, ml/w1, "
        "ml/w2)\nNODE "
    )
    assert "ml/b0 (on " in text and "):\nGroup:     ml/big (placed)\nNODE " in text
    x0 = text[text.index("ml/x0 (unschedulable):\n") :]
    assert x0.startswith(
        "ml/x0 (unschedulable):\nGroup:     ml/wait (waiting: waiting for pod group ml/wait: "
        "1 of 4 pods exist)\n"
    )
    p0 = text[text.index("ml/p0 (unschedulable):\n") :]
    assert p0.startswith("ml/p0 (unschedulable):\nNODE ")
    doc = json.loads(_simulate(tmp_path, capsys, "-o", "json", "--explain"))
    pods = {p["name"]: p for p in doc["pods"]}
    train = {g["group"]: g for g in doc["groups"]}["ml/train"]
    assert pods["w1"]["group_message"] == train["message"]
    assert pods["w1"]["group_blocking"] == ["ml/w0", "ml/w1", "ml/w2"]
    assert (pods["b0"]["group_message"], pods["b0"]["group_blocking"]) == (None, [])
    assert "group_message" not in pods["p0"]
    plain = json.loads(_simulate(tmp_path, capsys, "-o", "json"))
    assert "group_message" not in {k for p in plain["pods"] for k in p}
