"""A loopback HTTP/1.1 server for the simulated fleet, so any OpenAI client (any language) can talk to it.

Plain asyncio streams: keep-alive, ``Content-Length`` (or chunked) request bodies, one request at a time per connection.
It serves the same ``SimFleet.handle`` the in-process transport uses. ``gradebench sim-serve`` runs ``serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import httpx2

from ._fleet import SimFleet

__all__ = ["SimServer", "serve", "start_server"]

log = logging.getLogger("gradebench")

_MAX_BODY = 64 * 1024 * 1024  # a judge prompt with long transcripts is large, but never this large
_HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}


class _BadRequest(Exception):
    pass


class SimServer:
    """A running loopback server; ``await close()`` (or ``async with``) stops it."""

    def __init__(self, server: asyncio.Server, fleet: SimFleet, host: str):
        self._server = server
        self.fleet = fleet
        """The fleet answering requests (its ``requests`` list records them)."""
        self.host = host
        """The address listened on."""
        self.port: int = server.sockets[0].getsockname()[1]
        """The port listened on (the one picked when 0 was asked for)."""
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. ``http://127.0.0.1:8000/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    async def serve_forever(self) -> None:
        """Serve until cancelled."""
        await self._server.serve_forever()

    async def close(self) -> None:
        """Stop listening and drop open keep-alive connections."""
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        # a connection still answering would log its cancellation after the loop ends: let each one finish first
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._server.wait_closed()

    async def __aenter__(self) -> SimServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._writers.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection should close."""
        line = await reader.readline()
        if not line.strip():
            return False
        try:
            method, target, version, headers, body = await self._read(line, reader, writer)
        except _BadRequest as exc:
            await self._write(writer, 400, [("content-type", "text/plain")], str(exc).encode(), keep_alive=False)
            return False
        lowered = {k.lower(): v for k, v in headers}
        connection = lowered.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        authority = lowered.get("host") or f"{self.host}:{self.port}"
        request = httpx2.Request(method, f"http://{authority}{target}", headers=headers, content=body)
        response = await self.fleet.handle(request)
        out = [(k, v) for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP]
        await self._write(writer, response.status_code, out, response.content, keep_alive=keep_alive)
        return keep_alive

    @staticmethod
    async def _read(line: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest("malformed request line")
        method, target, version = parts
        headers: list[tuple[str, str]] = []
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, sep, value = raw.decode("latin-1").partition(":")
            if not sep:
                raise _BadRequest("malformed header line")
            headers.append((name.strip(), value.strip()))
        lowered = {k.lower(): v for k, v in headers}
        if lowered.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "chunked" in lowered.get("transfer-encoding", "").lower():
            chunks = []
            while True:
                size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
                if sum(map(len, chunks)) > _MAX_BODY:
                    raise _BadRequest("request body too large")
            body = b"".join(chunks)
        else:
            try:
                length = int(lowered.get("content-length", "0"))
            except ValueError:
                raise _BadRequest("bad Content-Length") from None
            if length < 0 or length > _MAX_BODY:
                raise _BadRequest("bad Content-Length")
            body = await reader.readexactly(length)
        headers = [(k, v) for k, v in headers if k.lower() not in ("transfer-encoding", "content-length")]
        return method, target, version, headers, body

    @staticmethod
    async def _write(
        writer: asyncio.StreamWriter, status: int, headers: list[tuple[str, str]], body: bytes, *, keep_alive: bool
    ) -> None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Unknown"
        head = [f"HTTP/1.1 {status} {phrase}"]
        head += [f"{k}: {v}" for k, v in headers]
        head += [f"content-length: {len(body)}", f"connection: {'keep-alive' if keep_alive else 'close'}"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()


async def start_server(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    latency_scale: float | None = None,
    seed: int = 0,
    fleet: SimFleet | None = None,
) -> SimServer:
    """Start the sim on ``host:port`` (0 picks a free port) and return at once; ``await server.close()`` stops it."""
    fleet = fleet or SimFleet(latency_scale=latency_scale, seed=seed)
    holder: list[SimServer] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await holder[0]._connection(reader, writer)

    server = await asyncio.start_server(on_connect, host, port)
    sim = SimServer(server, fleet, host)
    holder.append(sim)
    return sim


async def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    latency_scale: float | None = None,
    seed: int = 0,
    fleet: SimFleet | None = None,
    ready: Callable[[SimServer], None] | None = None,
) -> None:
    """Serve the simulated fleet over HTTP until cancelled (what ``gradebench sim-serve`` runs); ``ready`` is called
    once the port is bound (an address in use raises ``OSError`` before it)."""
    sim = await start_server(host, port, latency_scale=latency_scale, seed=seed, fleet=fleet)
    if ready is not None:
        ready(sim)
    log.info("gradebench sim serving %d models at %s", len(sim.fleet.profiles), sim.base_url)
    try:
        await sim.serve_forever()
    finally:
        await sim.close()
