"""The MCP benchmark: a store call against a no-op tool, over streamable HTTP and stdio.

Measured and printed, never asserted (``python -m benchmarks`` reports it beside the
operations spec's target: a store call within a small factor of a no-op tool on each
transport).
Every server is its own process, as in real use; see :func:`bench`.
``python -m benchmarks.mcp [auto|legacy] [--calls N]`` runs it alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer

from mcp_client.client import episode_client
from mcp_client.http import _bind, _uvicorn_server, authenticated_app, mcp_url

__all__ = ["bench"]


# --- benchmark (measured and printed, never asserted) ---------------------------------------------------------


_NOOP_STDIO = textwrap.dedent("""\
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="noop", log_level="WARNING")

    async def noop() -> str:
        return "ok"

    server.add_tool(noop, name="noop", structured_output=False)
    server.run("stdio")
    """)


class _AnyToken:
    """The no-op server's verifier: any bearer token passes (the middleware still runs)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="noop", scopes=[])


def _noop_server() -> MCPServer:
    server = MCPServer(name="noop", log_level="WARNING")

    async def noop() -> str:
        return "ok"

    server.add_tool(noop, name="noop", structured_output=False)
    return server


def _serve_noop_http(host: str = "127.0.0.1", port: int = 0) -> None:
    """The benchmark's no-op server over streamable HTTP, behind the same bearer middleware as
    the store (any token passes); prints ``noop <url>`` once the socket is bound."""
    sock = _bind(host, port)
    print(f"noop {mcp_url(host, sock.getsockname()[1])}", flush=True)
    try:
        _uvicorn_server(authenticated_app(_noop_server(), _AnyToken(), host=host), "warning").run(sockets=[sock])
    finally:
        sock.close()


@contextlib.contextmanager
def _spawned(code: str, cwd: str, env: dict[str, str]) -> Iterator[str]:
    """Run ``python -c code``; yield its first line of output; terminate it on exit."""
    import subprocess

    process = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line:
            raise RuntimeError(f"the benchmark server did not start: {code}")
        yield line
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


async def _timed_calls(target: Any, name: str, n: int, *, token: str | None = None, mode: str = "auto",
                       warmup: int = 20) -> list[float]:
    async with episode_client(target, token=token, mode=mode) as client:
        for _ in range(warmup):
            await client.call(name)
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            is_error, text = await client.call(name)
            samples.append(time.perf_counter() - t)
            if is_error:
                raise RuntimeError(f"{name} failed during the benchmark: {text[:200]}")
        return samples


def bench(task: str = "short-runway", seed: int = 7, n: int = 300, *, mode: str = "auto",
          out: IO[str] | None = None) -> dict[str, float]:
    """Median round trip (ms) of ``n`` ``store_status`` calls against ``n`` calls of a no-op tool
    on a separate MCPServer, over streamable HTTP and over stdio, all in this one run.

    Every server is its own process, as in real use: over HTTP, :func:`serve_http` with one
    episode and a no-op server behind the same bearer middleware, both on loopback; over
    stdio, ``python -m mcp_client mcp --task TASK --seed SEED --no-trial`` and a tiny no-op script.  One client per
    server, ``mode`` as :class:`mcp.Client` takes it (``"auto"`` negotiates 2026-07-28 over
    both transports; ``"legacy"`` forces the handshake and, over HTTP, a session), 20 calls
    of warm-up each.  Returns the medians and the ratios store/no-op per transport; prints a
    small table on ``out``.
    """
    from mcp import StdioServerParameters

    out = out or sys.stdout
    repo = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    medians: dict[str, float] = {}

    store_code = f"from mcp_client.http import serve_http; serve_http('127.0.0.1', 0, [({task!r}, {seed})])"
    noop_code = "from benchmarks.mcp import _serve_noop_http; _serve_noop_http()"
    with _spawned(store_code, repo, env) as store_line, _spawned(noop_code, repo, env) as noop_line:
        store_url, token = store_line.split()[-4], store_line.split()[-1]
        noop_url = noop_line.split()[-1]
        store = asyncio.run(_timed_calls(store_url, "store_status", n, token=token, mode=mode))
        noop = asyncio.run(_timed_calls(noop_url, "noop", n, token="any", mode=mode))
    medians["http_store_status_ms"] = statistics.median(store) * 1000
    medians["http_noop_ms"] = statistics.median(noop) * 1000

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp, "noop_stdio.py")
        script.write_text(_NOOP_STDIO)
        store_params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_client", "mcp", "--task", task, "--seed", str(seed),
                                                                         "--no-trial"],
                                             cwd=repo, env=env)
        noop_params = StdioServerParameters(command=sys.executable, args=[str(script)], cwd=repo, env=env)
        store = asyncio.run(_timed_calls(store_params, "store_status", n, mode=mode))
        noop = asyncio.run(_timed_calls(noop_params, "noop", n, mode=mode))
    medians["stdio_store_status_ms"] = statistics.median(store) * 1000
    medians["stdio_noop_ms"] = statistics.median(noop) * 1000

    result = dict(medians)
    result["http_ratio"] = medians["http_store_status_ms"] / medians["http_noop_ms"]
    result["stdio_ratio"] = medians["stdio_store_status_ms"] / medians["stdio_noop_ms"]
    result["http_over_stdio_store"] = medians["http_store_status_ms"] / medians["stdio_store_status_ms"]
    result["n"] = n
    print(f"median of {n} calls, mode={mode}", file=out)
    for transport in ("http", "stdio"):
        print(f"  {transport:5}  store_status {result[f'{transport}_store_status_ms']:.3f} ms"
              f"  no-op {result[f'{transport}_noop_ms']:.3f} ms  ratio {result[f'{transport}_ratio']:.2f}",
              file=out)
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mcp",
        description="Median round trip of store_status against a no-op MCP tool, over streamable HTTP and "
                    "stdio, every server its own process; printed, never asserted.")
    parser.add_argument("mode", nargs="?", default="auto", choices=("auto", "legacy"),
                        help="the MCP client's mode: auto negotiates the current protocol, legacy forces the "
                             "handshake (and an HTTP session); default auto")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per server, after 20 of warm-up "
                                                               "(default 300)")
    parser.add_argument("--task", default="short-runway", help="the store's task (default short-runway)")
    parser.add_argument("--seed", type=int, default=7, help="the store's seed (default 7)")
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error(f"--calls must be at least 1, not {args.calls}")
    bench(args.task, args.seed, args.calls, mode=args.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
