"""store/location.py: the store URL, both schemes, and the URLs it refuses."""

from __future__ import annotations

import pytest

from podium.store.location import EtcdLocation, SqliteLocation, StoreLocation, parse_store_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param("podium.db", SqliteLocation("podium.db"), id="a plain path is SQLite"),
        pytest.param("sqlite://podium.db", SqliteLocation("podium.db"), id="sqlite relative"),
        pytest.param(
            "sqlite:///var/lib/podium.db",
            SqliteLocation("/var/lib/podium.db"),
            id="sqlite absolute",
        ),
        pytest.param(
            "etcd://127.0.0.1:2379/prod",
            EtcdLocation(("127.0.0.1:2379",), "prod/"),
            id="one endpoint",
        ),
        pytest.param(
            "etcd://a:2379,b:2379,c:2379/team/podium/",
            EtcdLocation(("a:2379", "b:2379", "c:2379"), "team/podium/"),
            id="three endpoints, a nested prefix",
        ),
        pytest.param(
            "etcd://a:2379", EtcdLocation(("a:2379",), "podium/"), id="the default prefix"
        ),
    ],
)
def test_store_urls(url: str, expected: StoreLocation) -> None:
    assert parse_store_url(url) == expected


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param("etcd:///prefix", "needs an endpoint", id="no endpoint"),
        pytest.param("etcd://host/prefix", "is not HOST:PORT", id="no port"),
        pytest.param("redis://h:1/x", "the store is sqlite://PATH", id="another scheme"),
        pytest.param("sqlite://", "needs a path", id="sqlite without a path"),
    ],
)
def test_store_urls_refused(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_store_url(url)


def test_a_location_prints_as_its_url() -> None:
    assert str(parse_store_url("etcd://a:1,b:2/team/x")) == "etcd://a:1,b:2/team/x/"
    assert str(parse_store_url("sqlite:///var/lib/podium.db")) == "/var/lib/podium.db"
