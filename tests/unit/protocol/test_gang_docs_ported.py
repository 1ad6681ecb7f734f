"""The Kubernetes documentation's rules for a PodGroup and a pod's scheduling group, each row
quoting its page, checked where Podium keeps them: a PodGroup's decode (protocol/objects.py)
and a pod's membership (protocol/gangs.py ``membership_errors``). Issue 24, "Tests".

Pages, as read in April 2026: kubernetes.io "Scheduling Group"
(concepts/workloads/pods/scheduling-group), "Pod Group Policies"
(concepts/workloads/workload-api/policies), "PodGroup Lifecycle"
(concepts/workloads/podgroup-api/lifecycle), and the API reference's field descriptions of
``scheduling.k8s.io/v1alpha2`` (Kubernetes v1.36; reference/kubernetes-api/scheduling).
The rules on a PodGroup's *update* (its policy, its minCount) are the store's:
tests/unit/store/test_gang_docs_ported.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_pod

from podium.protocol import objects as o
from podium.protocol.errors import LoadErrors
from podium.protocol.gangs import membership_errors, min_count, pod_group_key
from podium.protocol.loader import load_text

_GROUP = (
    "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
)


@dataclass(frozen=True)
class GroupRule:
    """A page's sentence and a PodGroup spec under it: refused at ``path`` with ``reason``,
    or (``path`` "") read with ``min_count``."""

    says: str
    spec: str
    path: str = ""
    reason: str = ""
    min_count: int | None = None


GROUP_RULES = [
    GroupRule(
        # Pod Group Policies: "You must specify exactly one policy for each group."
        # API reference, PodGroupSchedulingPolicy: "Exactly one policy must be set."
        "exactly one policy: both",
        "{schedulingPolicy: {basic: {}, gang: {minCount: 2}}}",
        "$.spec.schedulingPolicy",
        "spec.schedulingPolicy: Invalid value: exactly one of basic or gang must be set",
    ),
    GroupRule(
        "exactly one policy: none",
        "{schedulingPolicy: {}}",
        "$.spec.schedulingPolicy",
        "spec.schedulingPolicy: Invalid value: exactly one of basic or gang must be set",
    ),
    GroupRule("exactly one policy: basic", "{schedulingPolicy: {basic: {}}}", min_count=None),
    GroupRule("exactly one policy: gang", "{schedulingPolicy: {gang: {minCount: 4}}}", min_count=4),
    GroupRule(
        # API reference, GangSchedulingPolicy.minCount: "It must be a positive integer."
        "minCount a positive integer: 0",
        "{schedulingPolicy: {gang: {minCount: 0}}}",
        "$.spec.schedulingPolicy.gang.minCount",
        "spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than zero",
    ),
    GroupRule(
        "minCount a positive integer: -1",
        "{schedulingPolicy: {gang: {minCount: -1}}}",
        "$.spec.schedulingPolicy.gang.minCount",
        "spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than zero",
    ),
    GroupRule(
        "minCount a positive integer: 1", "{schedulingPolicy: {gang: {minCount: 1}}}", min_count=1
    ),
]


@pytest.mark.parametrize("rule", GROUP_RULES, ids=attrgetter("says"))
def test_a_pod_group_as_the_docs_define_it(rule: GroupRule) -> None:
    text = _GROUP + f"spec: {rule.spec}"
    if not rule.path:
        [group] = load_text(text, source="g.yaml")
        assert isinstance(group, o.PodGroup)
        assert min_count(group) == rule.min_count
        return
    with pytest.raises(LoadErrors) as caught:
        load_text(text, source="g.yaml")
    [error] = caught.value.errors
    assert (error.kind, error.path) == ("PodGroup", rule.path)
    assert error.reason.startswith(rule.reason), error.reason


@dataclass(frozen=True)
class MemberRule:
    """A page's sentence and a pod (``old``: the stored one, on update): the group it names
    (``key``) and the errors a put of it gets (none: allowed)."""

    says: str
    pod: o.Pod
    old: o.Pod | None
    key: str | None
    errors: tuple[tuple[str, str], ...] = ()


_FIELD = "spec.schedulingGroup.podGroupName"


def _member(group: str | None, ns: str = "some-ns") -> o.Pod:
    b = make_pod("worker-0").ns(ns)
    if group is not None:
        b.group(group)
    pod: o.Pod = b.obj()
    return pod


MEMBER_RULES = [
    MemberRule(
        # Scheduling Group: "This field establishes a link to a specific PodGroup object in the
        # same namespace by name." (the page's own example)
        "a PodGroup in the same namespace, by name",
        _member("training-worker-0"),
        None,
        "some-ns/training-worker-0",
    ),
    MemberRule(
        # The name alone: a namespace/name reference would reach across namespaces, which
        # no form allows.
        "not in another namespace",
        _member("other-ns/training-worker-0"),
        None,
        "some-ns/other-ns/training-worker-0",
        (
            (
                f"$.{_FIELD}",
                f'{_FIELD}: Invalid value: "other-ns/training-worker-0": a pod group is in the '
                "pod's own namespace (some-ns); name it without a namespace",
            ),
        ),
    ),
    MemberRule(
        # PodGroup Lifecycle: "PodGroup names must be unique within a namespace and must be
        # valid DNS subdomains."
        "a DNS subdomain",
        _member("Training_0"),
        None,
        "some-ns/Training_0",
        (
            (
                f"$.{_FIELD}",
                f'{_FIELD}: Invalid value: "Training_0": a lowercase RFC 1123 subdomain must '
                "consist of lower case alphanumeric characters, '-' or '.', and must start and "
                "end with an alphanumeric character (e.g. 'example.com', regex used for "
                "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ),
        ),
    ),
    MemberRule(
        # Scheduling Group (and PodGroup Lifecycle, Limitations): "The schedulingGroup field is
        # immutable. Once set, a Pod cannot be moved to a different PodGroup."
        "immutable: moved to another PodGroup",
        _member("training-worker-1"),
        _member("training-worker-0"),
        "some-ns/training-worker-1",
        (
            (
                f"$.{_FIELD}",
                f'{_FIELD}: Invalid value: "training-worker-1": field is immutable (the pod was '
                'in pod group "training-worker-0")',
            ),
        ),
    ),
    MemberRule(
        "immutable: taken out of its PodGroup",
        _member(None),
        _member("training-worker-0"),
        None,
        (
            (
                f"$.{_FIELD}",
                f"{_FIELD}: Invalid value: null: field is immutable (the pod was in pod group "
                '"training-worker-0")',
            ),
        ),
    ),
    MemberRule(
        "immutable: set once the pod exists",
        _member("training-worker-0"),
        _member(None),
        "some-ns/training-worker-0",
        (
            (
                f"$.{_FIELD}",
                f'{_FIELD}: Invalid value: "training-worker-0": field is immutable (the pod was '
                "in no pod group)",
            ),
        ),
    ),
    MemberRule(
        "immutable: the same PodGroup again",
        _member("training-worker-0"),
        _member("training-worker-0"),
        "some-ns/training-worker-0",
    ),
]


@pytest.mark.parametrize("rule", MEMBER_RULES, ids=attrgetter("says"))
def test_a_scheduling_group_as_the_docs_define_it(rule: MemberRule) -> None:
    assert pod_group_key(rule.pod) == rule.key
    assert tuple(membership_errors(rule.pod, rule.old)) == rule.errors
