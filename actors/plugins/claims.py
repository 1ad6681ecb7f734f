"""A pod volume's PersistentVolumeClaim, as the volume predicates read it.

Kubernetes counterparts (v1.14.0): ``GetPersistentVolumeClaimClass`` and
``GetPersistentVolumeClass`` in pkg/apis/core/v1/helper/helpers.go (a class is the beta
annotation, then the spec field); the claim lookup the volume-count predicates open with
(``filterVolumes`` in pkg/scheduler/algorithm/predicates/predicates.go,
``filterAttachableVolumes`` in csi_volume_predicate.go): a claim volume without a claim name
is an error, the claim is looked up in the pod's namespace, then the volume bound to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from podium.actors.framework.interface import PredicateError

if TYPE_CHECKING:
    from podium.actors.framework.snapshot import ClusterObjects
    from podium.protocol.objects import (
        PersistentVolume,
        PersistentVolumeClaim,
        PersistentVolumeClaimVolumeSource,
    )

__all__ = [
    "BETA_STORAGE_CLASS_ANNOTATION",
    "ERR_CLAIM_WITHOUT_NAME",
    "claim_class",
    "pv_class",
    "resolve_claim",
]

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"

ERR_CLAIM_WITHOUT_NAME = "PersistentVolumeClaim had no name"
"""v1.14's error for a claim volume whose ``claimName`` is empty (``fmt.Errorf``)."""


def claim_class(claim: PersistentVolumeClaim) -> str:
    """``v1helper.GetPersistentVolumeClaimClass``: the beta annotation, then the spec field."""
    annotated = claim.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return claim.spec.storage_class_name or ""


def pv_class(pv: PersistentVolume) -> str:
    """``v1helper.GetPersistentVolumeClass``: the beta annotation, then the spec field."""
    annotated = pv.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return pv.spec.storage_class_name


def resolve_claim(
    source: PersistentVolumeClaimVolumeSource, namespace: str, objects: ClusterObjects
) -> tuple[str, PersistentVolumeClaim | None, PersistentVolume | None]:
    """The claim a pod volume names and the volume bound to it.

    Args:
        source: the pod volume's ``persistentVolumeClaim``.
        namespace: the pod's namespace.
        objects: the cluster's claims and volumes.

    Returns:
        The claim's key (``namespace/name``); the claim, or ``None`` when it is missing; the
        PersistentVolume it names, or ``None`` when the claim is missing, names none, or names
        one that is missing.

    Raises:
        PredicateError: the volume names no claim.
    """
    if not source.claim_name:
        raise PredicateError(ERR_CLAIM_WITHOUT_NAME)
    key = f"{namespace}/{source.claim_name}"
    claim = objects.persistent_volume_claims.get(key)
    if claim is None or not claim.spec.volume_name:
        return key, claim, None
    return key, claim, objects.persistent_volumes.get(claim.spec.volume_name)
