"""Machinery for the browser test: a throwaway JupyterLab server, headless Chromium, a notebook to run.

Nothing here reaches past loopback: JupyterLab is told not to fetch news, check for updates or query PyPI, and
Chromium runs with its background networking off.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ENABLE_HINT = "install Chromium to enable it: apt-get install -y chromium"

# Flags for `python -m jupyterlab`, each read from the installed JupyterLab 4.6 / jupyter_server 2.x sources.
LAB_FLAGS = [
    "--no-browser",
    "--ServerApp.ip=127.0.0.1",
    "--ServerApp.port_retries=0",  # fail rather than silently move to another port
    "--ServerApp.allow_root=True",  # CI runs as root
    "--LabApp.news_url=None",  # no Atom feed fetch (jupyterlab/labapp.py: news_url); also hides the news prompt
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",  # no pypi.org version check
    "--LabApp.extension_manager=readonly",  # the default "pypi" manager searches pypi.org when opened
    "--ServerApp.terminals_enabled=False",  # nothing here needs a terminal
]

# User settings: render every cell (the default "contentVisibility" windowing skips off-screen ones, which would hide
# outputs from the checks and the screenshot) and keep the notebook free of toasts.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "checkForUpdates": False,
        "fetchNews": "false",
        "doNotDisturbMode": True,
    },
}


def _die_with_parent() -> None:
    """Runs in the server's process before exec: on Linux, ask for SIGTERM when the test process dies, so a test run
    killed outright (say, by a CI timeout) does not leave JupyterLab behind. Best effort elsewhere."""
    with contextlib.suppress(Exception):
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


_PR_SET_PDEATHSIG = 1
try:
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, so the forked child only makes the call
except (AttributeError, OSError):  # not Linux
    _PRCTL = None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class JupyterLab:
    """A JupyterLab server in its own process group, rooted at ``root``; state and logs live under ``home``.

    Use as a context manager: the server is stopped (gracefully, then by signal to its process group) on exit.
    """

    def __init__(self, root: Path, home: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.home = home
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "jupyterlab.log"
        self.extra_env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        settings = self.home / "user-settings"
        return [
            sys.executable,
            "-m",
            "jupyterlab",
            *LAB_FLAGS,
            f"--ServerApp.port={self.port}",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={self.home / 'workspaces'}",
        ]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in list(env):  # a config, data or runtime dir from the caller would leak state in
            if name.startswith("JUPYTER_"):
                del env[name]
        env.update(
            JUPYTER_CONFIG_DIR=str(self.home / "config"),
            JUPYTER_DATA_DIR=str(self.home / "data"),
            JUPYTER_RUNTIME_DIR=str(self.home / "runtime"),
            IPYTHONDIR=str(self.home / "ipython"),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            PYTHONUNBUFFERED="1",
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 60.0) -> None:
        """Start the server and wait until its API answers; raise with the server's log if it does not in time."""
        self.home.mkdir(parents=True, exist_ok=True)
        for name, values in LAB_SETTINGS.items():
            path = self.home / "user-settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=self.root,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so stop() can signal all of it
                preexec_fn=_die_with_parent if _PRCTL is not None else None,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with status {self.proc.returncode}:\n{self.log()}")
            try:
                status = self.api("GET", "/api/status", timeout=2)
                if "started" in status:
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"JupyterLab did not answer on {self.url} within {timeout:.0f} s:\n{self.log()}")
            time.sleep(0.2)

    def api(self, method: str, path: str, timeout: float = 5.0) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else {}

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down through the API (which stops the kernels), then signal the process group; never raises."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            self.api("POST", "/api/shutdown", timeout=5)
            proc.wait(timeout=timeout)
            return
        except Exception:
            pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=timeout)
                return
            except subprocess.TimeoutExpired:
                continue

    def log(self, tail: int = 12_000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return text[-tail:]

    def __enter__(self) -> JupyterLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def prepare_notebook(source: Path, dest_dir: Path, append: Sequence[str] = ()) -> Path:
    """Write the notebook to run into ``dest_dir``: a copy of ``source`` with outputs cleared, the kernel set to
    the server's own ``python3`` (so no kernel picker appears), and a code cell of each of ``append`` at the end
    (the test's own cells: the notebook in the repo is left as it is)."""
    nb = json.loads(source.read_text())
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    for n, text in enumerate(append):
        cell = {"cell_type": "code", "id": f"browser-test-{n}", "metadata": {}, "execution_count": None}
        nb["cells"].append(cell | {"outputs": [], "source": text})
    nb.setdefault("metadata", {})["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb["metadata"].pop("widgets", None)  # saved widget state would render stale views before the run
    path = dest_dir / source.name
    path.write_text(json.dumps(nb, indent=1))
    return path
