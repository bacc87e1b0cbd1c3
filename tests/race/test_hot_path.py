"""What a call costs on the hot path, and what it does not do twice: its body is encoded once (the record's text
goes on the wire as it is), a body in the spool file is not compressed, and the table is not laid out for a log that
would not show it."""

from __future__ import annotations

from gradebench._records import spool as spool_module
from gradebench._records.codec import PACK_FROM, SPOOLED_PACK_FROM, pack, unpack
from gradebench._records.spool import Spool, body_bytes


def test_a_body_in_the_spool_file_is_compressed_only_when_long() -> None:
    store = spool_module.spool()
    assert store.writable
    judge_sized = "{" + "x" * 3000 + "}"  # a judge's request of a small race: 3 kB
    before = store.size
    kept = pack(judge_sized)
    assert body_bytes(kept)[:1] == b"=" and store.size == before + len(judge_sized) + 1
    assert unpack(kept) == judge_sized
    long = "{" + "y" * SPOOLED_PACK_FROM + "}"
    kept = pack(long.encode())
    assert body_bytes(kept)[:1] == b"z" and len(kept) < 1000 and unpack(kept) == long


def test_a_body_that_stays_on_the_heap_is_compressed_as_before(tmp_path, monkeypatch, caplog) -> None:
    broken = Spool(str(tmp_path / "no such folder"))  # the spool cannot be written: bodies stay in memory
    assert not broken.writable
    monkeypatch.setattr(spool_module, "spool", lambda: broken)
    monkeypatch.setattr("gradebench._records.codec.spool", lambda: broken)
    text = "{" + "x" * PACK_FROM + "}"
    kept = pack(text)
    assert isinstance(kept, bytes) and kept[:1] == b"z" and unpack(kept) == text
