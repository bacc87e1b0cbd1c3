"""A machine that cannot build llama-server says so: `scripts/real_models.py prepare` exits 3 with the reason, and the
tests marked ``real`` skip with it (never a silent pass). Not marked ``real``: it runs in ``make test``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import SCRIPT


def test_no_compiler_is_a_clear_reason_not_a_failure_or_a_pass(tmp_path: Path) -> None:
    bare = tmp_path / "bin"  # a PATH with python alone: no cmake, no compiler, no make
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bare), "GRADEBENCH_REAL_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [str(bare / "python"), str(SCRIPT), "prepare"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("unavailable: cannot build llama-server: cmake, c++, make not found"), done.stderr
    assert not (tmp_path / "cache" / "downloads").exists()  # nothing fetched before the check
