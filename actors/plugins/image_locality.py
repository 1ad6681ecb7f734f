"""ImageLocalityPriority: prefer nodes that already hold the pod's container images.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/image_locality.go@v1.14.0
(``ImageLocalityPriorityMap``, ``calculatePriority``, ``sumImageScores``,
``scaledImageScore``, ``normalizedImageName``). For each of the pod's containers (init
containers are not counted) whose image, normalised, the node lists, the node gains

    int(size * numNodesHavingImage / totalNumNodes)

(float64 arithmetic truncated, which damps images already spread everywhere). The sum is
clamped to [23 MiB, 1000 MiB] and scaled to 0-10 with Go integer division. v1.14's upper
bound is the constant 1000 MiB (later versions multiply it by the number of containers).

Image names are normalised as v1.14 does: a name whose last ``:`` does not come after its last
``/`` gets ``:latest`` appended (``gcr.io:5000/root`` -> ``gcr.io:5000/root:latest``); nothing
else (no registry or ``library/`` defaulting). ``size`` is the node's own size for the image;
``numNodesHavingImage`` and ``totalNumNodes`` are taken over every node of the snapshot, as
v1.14's priority metadata and image states are. There is no reduce step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import (
    MAX_PRIORITY,
    SKIP,
    PluginArgs,
    Skip,
    VectorScorePlugin,
)
from podium.actors.plugins import names
from podium.actors.plugins.reduce import NoReduce

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "FACTORIES",
    "MAX_THRESHOLD",
    "MIN_THRESHOLD",
    "NAME",
    "ImageLocality",
    "normalized_image_name",
]

NAME = names.IMAGE_LOCALITY

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
"""Below this sum of scaled image sizes a node scores 0."""
MAX_THRESHOLD = 1000 * MB
"""At or above this sum a node scores 10."""

DEFAULT_IMAGE_TAG = "latest"


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: append ``:latest`` unless the name already carries a tag/digest."""
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:{DEFAULT_IMAGE_TAG}"
    return name


def calculate_priority(sum_scores: int) -> int:
    """``calculatePriority``: clamp the sum to the thresholds and scale it to 0-10."""
    clamped = min(max(sum_scores, MIN_THRESHOLD), MAX_THRESHOLD)
    return MAX_PRIORITY * (clamped - MIN_THRESHOLD) // (MAX_THRESHOLD - MIN_THRESHOLD)


@dataclass(frozen=True, slots=True)
class _Meta:
    """Per container present somewhere: its normalised image and that image's spread."""

    images: tuple[tuple[str, float], ...]  # (normalised name, numNodes / totalNumNodes)


class ImageLocality(NoReduce, VectorScorePlugin[_Meta]):
    """ImageLocalityPriority (map only)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_score(
        self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]
    ) -> _Meta | Skip:
        """The spread of each container image; :data:`SKIP` when no node holds any of them."""
        states = snapshot.image_states()
        total = len(snapshot)
        images: list[tuple[str, float]] = []
        for container in pod.pod.spec.containers:
            name = normalized_image_name(container.image)
            state = states.get(name)
            if state is not None and total > 0:
                images.append((name, float(state.num_nodes) / float(total)))
        return _Meta(tuple(images)) if images else SKIP

    def score(self, pod: PodInfo, meta: _Meta, node: NodeInfo) -> int:
        if node.node is None:
            return 0
        sizes: dict[str, int] = {}
        for image in node.node.status.images:
            for name in image.names:
                sizes.setdefault(name, image.size_bytes)
        total = sum(
            int(float(sizes[name]) * spread) for name, spread in meta.images if name in sizes
        )
        return calculate_priority(total)

    def score_columns(
        self, pod: PodInfo, meta: _Meta, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        total = np.zeros(len(rows), dtype=np.int64)
        for name, spread in meta.images:
            sizes = cols.image_sizes(name)[rows]
            scaled = (sizes.astype(np.float64) * spread).astype(np.int64)  # truncates, as int64()
            total += np.where(sizes >= 0, scaled, 0)
        clamped = np.clip(total, MIN_THRESHOLD, MAX_THRESHOLD)
        return MAX_PRIORITY * (clamped - MIN_THRESHOLD) // (MAX_THRESHOLD - MIN_THRESHOLD)


FACTORIES: dict[str, Callable[[PluginArgs], ImageLocality]] = {NAME: ImageLocality}
