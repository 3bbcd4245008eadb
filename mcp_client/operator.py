"""The operator API of the HTTP episode server: open, label, end, settle and list sessions.

Apart from the agents' tools in every way: its own routes under ``/operator``, its own
credential (``Authorization: Bearer <operator token>``, from ``--operator-token`` or
``STOREBENCH_OPERATOR_TOKEN``), compared in constant time against its digest.  An
episode's token is refused here and the operator token is refused at ``/mcp``, so an
agent can never end, settle or relabel its own episode, and no tool can.

Routes (JSON in and out; errors are ``{"error": {"code", "message"}}``)::

    GET  /operator/sessions                      every session, live and settled
    POST /operator/sessions                      {"task", "seed", "labels"?} -> {"id", "token", ...}
    GET  /operator/sessions/{id}                 one session
    POST /operator/sessions/{id}/labels          {"model"?, "harness"?, "metrics"?, ...}
    POST /operator/sessions/{id}/end             freeze the store now, settle, revoke the token
    POST /operator/sessions/{id}/settle          settle a session that reached its horizon

Labels (model, harness, token ``metrics`` and the like) are the operator's account of who
played; they land in the trial's ``summary.json`` and are never graded.  The server's own
labels (``env``, ``ended_by``) are refused here: see "Labels and who may set them" in
:mod:`mcp_client.sessions`.

The routes run on the event loop that also carries every episode's MCP traffic, so a
handler that writes to disk or waits for a session's lock (opening, labelling, ending,
settling: a settlement holds the lock while it grades and writes the trial folder) does
that on a worker thread (``anyio.to_thread``); the lock, not the thread, orders it against
the episode's calls.  Each goes through the hub, which counts the writes in progress, so that
a stopping server waits for them before it lets go of its state folder (:mod:`mcp_client.http`).
Listing and reading a session only read memory and stay on the loop.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from environment.errors import InvalidSeed, StoreBenchError, check_seed

from .codes import ServerErrorCode

__all__ = ["OPERATOR_PATH", "operator_routes"]

OPERATOR_PATH = "/operator"


MAX_BODY = 64 * 1024
REFUSED = ("the operator API refused the request (401): send the operator token the server was started with "
           "(--operator-token or STOREBENCH_OPERATOR_TOKEN) as \"Authorization: Bearer <token>\"; an episode's "
           "token is not accepted here")


class BodyTooLarge(StoreBenchError):
    code = ServerErrorCode.BODY_TOO_LARGE


# The HTTP status of a refusal by its code; any other refusal is the request's fault (400).
_STATUS_OF: dict[str, int] = {ServerErrorCode.UNKNOWN_SESSION: 404, ServerErrorCode.BODY_TOO_LARGE: 413}


def _no_constant(name: str) -> float:
    """``json.loads``'s hook for NaN and Infinity, which JSON does not have: refused."""
    raise ValueError(f"{name} is not a JSON number")


# Each route's body, as its refusals show it.
OPEN_EXAMPLE = '{"task": "steady", "seed": 7}'
LABELS_EXAMPLE = '{"model": "m", "harness": "h"}'
END_EXAMPLE = '{"labels": {"model": "m"}}'


def seed_of(value: object) -> int:
    """The seed of a request to open a session, refused as the CLI and OpenEnv refuse one
    (:class:`~environment.errors.InvalidSeed`, code ``invalid_seed``); a seed sent as text
    (``"7"``) is told to be sent as a number."""
    if isinstance(value, str):
        raise InvalidSeed(f"the seed {json.dumps(value)} is text: give the seed as an integer, e.g. {OPEN_EXAMPLE}",
                          seed=repr(value))
    return check_seed(value)


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def operator_routes(hub: Any, operator_token: str) -> list[Route]:
    """The ``/operator`` routes over ``hub`` (an :class:`~mcp_client.http.EpisodeHub`)."""
    if len(operator_token) < 16:
        raise ValueError("the operator token must be at least 16 characters")
    expected = hashlib.sha256(operator_token.encode()).digest()

    def authorised(request: Request) -> bool:
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not presented:
            return False
        return hmac.compare_digest(hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest(), expected)

    async def body_of(request: Request, example: str) -> dict:
        """The request's JSON object (``{}`` for no body); a refusal shows ``example``, the route's own body."""
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise BodyTooLarge(f"the request body is over {MAX_BODY // 1024} KiB; labels and options are small "
                                   "objects")
        if not raw:
            return {}
        try:
            data = json.loads(raw, parse_constant=_no_constant)
        except RecursionError:
            raise StoreBenchError("the request body is nested too deeply; labels and options are flat objects") from None
        except ValueError:
            raise StoreBenchError(f"the request body is not JSON; send an object such as {example}") from None
        if not isinstance(data, dict):
            raise StoreBenchError(f"the request body must be a JSON object, such as {example}")
        return data

    def guarded(handler):
        async def endpoint(request: Request) -> JSONResponse:
            if not authorised(request):
                return JSONResponse({"error": {"code": ServerErrorCode.UNAUTHORISED, "message": REFUSED}},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
            try:
                return await handler(request)
            except StoreBenchError as exc:
                status = _STATUS_OF.get(exc.code, 400)
                return _error(status, exc.code or ServerErrorCode.INVALID_REQUEST, exc.message)

        return endpoint

    async def list_sessions(request: Request) -> JSONResponse:
        return JSONResponse({"sessions": [s.as_json() for s in hub.sessions()]})

    async def open_session(request: Request) -> JSONResponse:
        data = await body_of(request, OPEN_EXAMPLE)
        task, seed = data.get("task"), data.get("seed")
        if not isinstance(task, str) or seed is None:
            raise StoreBenchError(f"give the task id as a string and the seed as an integer, e.g. {OPEN_EXAMPLE}")
        seed = seed_of(seed)
        unknown = sorted(set(data) - {"task", "seed", "labels"})
        if unknown:
            raise StoreBenchError(f"unknown field(s) {', '.join(unknown)}; send task, seed and labels")
        token, session = await anyio.to_thread.run_sync(
            lambda: hub.open_session(task, seed, labels=data.get("labels")))
        return JSONResponse({**session.as_json(), "token": token}, status_code=201)

    async def get_session(request: Request) -> JSONResponse:
        return JSONResponse(hub.session(request.path_params["sid"]).as_json())

    async def set_labels(request: Request) -> JSONResponse:
        sid = request.path_params["sid"]
        hub.session(sid)
        labels = await body_of(request, LABELS_EXAMPLE)
        session = await anyio.to_thread.run_sync(lambda: hub.set_labels(sid, labels))
        return JSONResponse(session.as_json())

    async def end_session(request: Request) -> JSONResponse:
        data = await body_of(request, END_EXAMPLE)
        unknown = sorted(set(data) - {"labels"})
        if unknown:  # a label sent at the top level would be lost without a word
            raise StoreBenchError(f"unknown field(s) {', '.join(unknown)}; the end takes labels only, e.g. {END_EXAMPLE}")
        sid = request.path_params["sid"]
        hub.session(sid)
        result = await anyio.to_thread.run_sync(lambda: hub.end(sid, data.get("labels")))
        return JSONResponse({**hub.session(sid).as_json(), "score": result})

    async def settle_session(request: Request) -> JSONResponse:
        sid = request.path_params["sid"]
        session = hub.session(sid)
        if not session.over:
            return _error(409, "session_open", f"session {sid} is still open (window "
                          f"{session.episode.window + 1} of {session.episode.n_windows}); end it first with "
                          f"POST {OPERATOR_PATH}/sessions/{sid}/end")
        result = await anyio.to_thread.run_sync(lambda: hub.end(sid))
        return JSONResponse({**session.as_json(), "score": result})

    return [
        Route(f"{OPERATOR_PATH}/sessions", guarded(list_sessions), methods=["GET"]),
        Route(f"{OPERATOR_PATH}/sessions", guarded(open_session), methods=["POST"]),
        Route(f"{OPERATOR_PATH}/sessions/{{sid}}", guarded(get_session), methods=["GET"]),
        Route(f"{OPERATOR_PATH}/sessions/{{sid}}/labels", guarded(set_labels), methods=["POST"]),
        Route(f"{OPERATOR_PATH}/sessions/{{sid}}/end", guarded(end_session), methods=["POST"]),
        Route(f"{OPERATOR_PATH}/sessions/{{sid}}/settle", guarded(settle_session), methods=["POST"]),
    ]
