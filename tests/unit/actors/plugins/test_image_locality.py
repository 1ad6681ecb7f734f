"""ImageLocalityPriority, scalar and vector map forms.

Rows ported from pkg/scheduler/algorithm/priorities/image_locality_test.go@v1.14.0
(TestImageLocalityPriority: 3 of 3 rows; TestNormalizedImageName: 4 of 4 rows), names kept
(the Go name-normalisation rows have none; they are named by their input here). Plus the row
later versions added ("with node which has no images present"), rescaled to 0-10, and Podium
rows (marked below).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from priority_harness import node_infos, run_priority

from podium.actors.framework.interface import MAX_PRIORITY, SKIP, PluginArgs, VectorScorePlugin
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.image_locality import FACTORIES, ImageLocality, normalized_image_name
from podium.protocol import objects as o

MB = 1024 * 1024

Image = tuple[tuple[str, ...], int]  # names, size


def image_node(name: str, *images: Image) -> o.Node:
    b = make_node(name)
    for image_names, size in images:
        b.image(list(image_names), size)
    return b.obj()


def pod_with_images(*images: str) -> o.Pod:
    b = make_pod("p")
    for image in images:
        b.container(image=image)
    return b.obj()


NODE_40_300_2000: tuple[Image, ...] = (
    (("gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"), 40 * MB),
    (("gcr.io/300:latest", "gcr.io/300:v1"), 300 * MB),
    (("gcr.io/2000:latest",), 2000 * MB),
)
NODE_250_10: tuple[Image, ...] = (
    (("gcr.io/250:latest",), 250 * MB),
    (("gcr.io/10:latest", "gcr.io/10:v1"), 10 * MB),
)
TWO_NODES = (image_node("machine1", *NODE_40_300_2000), image_node("machine2", *NODE_250_10))


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]


# image_locality_test.go@v1.14.0 TestImageLocalityPriority (3 rows).
GO_CASES = [
    # machine1: gcr.io/40:latest 40MB -> 40M/2 < 23M: 0; machine2: 10 * (250M/2 - 23M) / (1000M - 23M) = 1.
    Case(
        "two images spread on two nodes, prefer the larger image one",
        pod_with_images("gcr.io/40", "gcr.io/250"),
        TWO_NODES,
        (0, 1),
    ),
    # machine1: 10 * ((40M + 300M)/2 - 23M) / (1000M - 23M) = 1; machine2: none present.
    Case(
        "two images on one node, prefer this node",
        pod_with_images("gcr.io/40", "gcr.io/300"),
        TWO_NODES,
        (1, 0),
    ),
    # machine1: 2000M/2 >= 1000M: 10; machine2: 10M/2 < 23M: 0.
    Case(
        "if exceed limit, use limit",
        pod_with_images("gcr.io/10", "gcr.io/2000"),
        TWO_NODES,
        (MAX_PRIORITY, 0),
    ),
]

# A later row of the same test (added after v1.14 with 0-100 scores, 65/0/0), on v1.14's 0-10
# scale: machine1 10 * (2000M/3 - 23M) / (1000M - 23M) = 6.
LATER_CASES = [
    Case(
        "if exceed limit, use limit (with node which has no images present)",
        pod_with_images("gcr.io/10", "gcr.io/2000"),
        (*TWO_NODES, image_node("machine3")),
        (6, 0, 0),
    ),
]

# Podium rows.
PODIUM_CASES = [
    # One node lists img:v1 twice; it counts once: 1000M * 1/2 = 500M -> 10 * 477 / 977 = 4.
    Case(
        "an image listed twice on a node counts that node once",
        pod_with_images("img:v1"),
        (image_node("machine1", (("img:v1", "img:v1"), 1000 * MB)), image_node("machine2")),
        (4, 0),
    ),
    # The upper bound is v1.14's constant 1000M, not 1000M per container.
    Case(
        "three containers share the one 1000MB upper bound",
        pod_with_images("a", "b", "c"),
        (
            image_node(
                "machine1",
                (("a:latest",), 600 * MB),
                (("b:latest",), 600 * MB),
                (("c:latest",), 600 * MB),
            ),
        ),
        (MAX_PRIORITY,),
    ),
    # Each node scores its own size for the image: 500M -> 4, 1000M -> 10 (spread 2/2).
    Case(
        "each node uses its own size for an image",
        pod_with_images("img:v2"),
        (
            image_node("machine1", (("img:v2",), 500 * MB)),
            image_node("machine2", (("img:v2",), 1000 * MB)),
        ),
        (4, MAX_PRIORITY),
    ),
    Case(
        "a tagged image is looked up under its tag",
        pod_with_images("gcr.io/300:v1"),
        (image_node("machine1", *NODE_40_300_2000),),
        (2,),  # 10 * (300M - 23M) / 977M
    ),
    Case(
        "init containers are not counted",
        make_pod("p").spec(initContainers=[{"name": "i", "image": "gcr.io/2000"}]).obj(),
        TWO_NODES,
        (0, 0),
    ),
]


@pytest.mark.parametrize("case", GO_CASES + LATER_CASES + PODIUM_CASES, ids=attrgetter("name"))
def test_image_locality_priority(case: Case) -> None:
    run = run_priority(ImageLocality(PluginArgs(names.IMAGE_LOCALITY)), case.pod, case.nodes)
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


def _fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


# image_locality_test.go@v1.14.0 TestNormalizedImageName (4 rows).
@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("root", "root:latest"),
        ("root:tag", "root:tag"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root@" + _fake_digest("root"), "root@" + _fake_digest("root")),
    ],
)
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_no_image_present_anywhere_skips() -> None:
    infos = node_infos(TWO_NODES)
    plugin = ImageLocality(PluginArgs(names.IMAGE_LOCALITY))
    meta = plugin.pre_score(PodInfo(pod_with_images("elsewhere:v1")), Snapshot(infos), infos)
    assert meta is SKIP


def test_factory_uses_the_entry_name() -> None:
    plugin = FACTORIES[names.IMAGE_LOCALITY](PluginArgs(names.IMAGE_LOCALITY))
    assert isinstance(plugin, VectorScorePlugin)
    assert plugin.name == names.IMAGE_LOCALITY
