"""A chat-completions endpoint on 127.0.0.1 for the agent runner's tests (one for all of them)."""
from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A responder takes the request body and gives (HTTP status, response bytes), or with a third
# item the response's extra headers.
Responder = Callable[[dict], tuple]


def completion(message: dict, *, model: str = "stub", prompt_tokens: int = 10,
               completion_tokens: int = 2) -> tuple[int, bytes]:
    """A 200 answer carrying one assistant ``message``."""
    return 200, json.dumps({"id": "x", "object": "chat.completion", "model": model,
                            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                      "total_tokens": prompt_tokens + completion_tokens}}).encode()


@contextmanager
def endpoint(responder: Responder, *, api_key: str | None = None) -> Iterator[tuple[str, list[dict]]]:
    """Serve ``responder`` at ``/v1/chat/completions``; yields the base URL and the request
    bodies seen.  Another path answers 404; (with ``api_key``) another bearer token, or none, 401."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the standard library's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            wrong_key = api_key is not None and self.headers.get("Authorization") != f"Bearer {api_key}"
            if self.path != "/v1/chat/completions" or wrong_key:
                self.send_response(404 if self.path != "/v1/chat/completions" else 401)
                self.end_headers()
                return
            seen.append(body)
            status, data, *extra = responder(body)
            self.send_response(status)
            for name, value in (extra[0] if extra else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request, client_address):  # a client that gave up (a timeout) is no error here
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
