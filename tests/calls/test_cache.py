"""The call cache: writes committed together, never lost when a session closes, never evicted."""

from __future__ import annotations

from gradebench._calls.cache import Cached, CallCache


def test_writes_are_committed_together_and_read_back_before_that(tmp_path) -> None:
    cache = CallCache(tmp_path)
    cache.set("k1", Cached(response='{"id": "x"}', latency_s=0.1, header_cost=0.5))
    assert cache.get("k1") == Cached(response='{"id": "x"}', latency_s=0.1, header_cost=0.5)  # still pending
    other = CallCache(tmp_path)
    assert other.get("k1") is None  # not committed yet
    for i in range(CallCache.FLUSH_AFTER - 1):
        cache.set(f"k{i + 2}", Cached(response="{}", latency_s=0.0))
    assert other.get("k1") is not None and len(other) == CallCache.FLUSH_AFTER  # the last write committed all


def test_a_write_waits_at_most_a_second_and_close_commits(tmp_path, monkeypatch) -> None:
    cache = CallCache(tmp_path)
    cache.set("a", Cached(response="{}", latency_s=0.0))
    monkeypatch.setattr(CallCache, "FLUSH_SECONDS", 0.0)
    cache.set("b", Cached(response="{}", latency_s=0.0))  # the oldest pending write is past the wait: both commit
    assert CallCache(tmp_path).get("a") is not None
    cache.set("c", Cached(response="{}", latency_s=0.0))
    monkeypatch.setattr(CallCache, "FLUSH_SECONDS", 60.0)
    cache.set("d", Cached(response="{}", latency_s=0.0))
    cache.close()
    assert CallCache(tmp_path).get("d") is not None


def test_nothing_is_evicted(tmp_path) -> None:
    assert CallCache(tmp_path)._store.eviction_policy == "none"


def test_writes_look_for_nothing_to_evict(tmp_path) -> None:
    cache = CallCache(tmp_path)
    assert cache._store.cull_limit == 0  # no expired keys to cull on each write: none is ever given an expiry
    cache.set("k", Cached(response="{}", latency_s=0.0))
    cache.close()
    assert CallCache(tmp_path).get("k") is not None
