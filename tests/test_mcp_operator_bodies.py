"""The operator API's refusals of a body: each route's shows that route's own body (a labels
route told to send ``{"task": ..., "seed": ...}`` was told the opening's), and a seed sent as
text is refused as ``invalid_seed``, as the CLI and OpenEnv refuse a seed that is no task seed."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx2

from mcp_client.http import EpisodeHub, create_app, running

OPERATOR = "operator-secret-for-tests-0123456789"
NOT_JSON = b"{task: steady"


@contextlib.contextmanager
def operator_api() -> Iterator[tuple[httpx2.Client, str]]:
    """A server's operator API with one session open: the client and the session's id."""
    with running(create_app(EpisodeHub(), operator_token=OPERATOR)) as port:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {OPERATOR}"},
                           timeout=30) as http:
            yield http, http.post("/operator/sessions", json={"task": "steady", "seed": 7}).json()["id"]


def refusal(response: httpx2.Response) -> dict:
    assert response.status_code == 400
    return response.json()["error"]


def test_a_labels_body_that_is_not_json_is_shown_a_labels_body():
    with operator_api() as (http, sid):
        error = refusal(http.post(f"/operator/sessions/{sid}/labels", content=NOT_JSON))
    assert error["message"] == 'the request body is not JSON; send an object such as {"model": "m", "harness": "h"}'


def test_an_end_body_that_is_not_json_is_shown_an_end_body():
    with operator_api() as (http, sid):
        error = refusal(http.post(f"/operator/sessions/{sid}/end", content=NOT_JSON))
    assert error["message"] == 'the request body is not JSON; send an object such as {"labels": {"model": "m"}}'


def test_an_opening_body_that_is_not_json_is_shown_an_opening_body():
    with operator_api() as (http, _sid):
        error = refusal(http.post("/operator/sessions", content=NOT_JSON))
    assert error["message"] == 'the request body is not JSON; send an object such as {"task": "steady", "seed": 7}'


def test_a_labels_body_that_is_no_object_is_shown_a_labels_body():
    with operator_api() as (http, sid):
        error = refusal(http.post(f"/operator/sessions/{sid}/labels", json=["model", "m"]))
    assert error["message"] == 'the request body must be a JSON object, such as {"model": "m", "harness": "h"}'


def test_a_seed_sent_as_text_is_an_invalid_seed():
    with operator_api() as (http, _sid):
        error = refusal(http.post("/operator/sessions", json={"task": "steady", "seed": "7"}))
    assert error == {"code": "invalid_seed", "message": 'the seed "7" is text: give the seed as an integer, e.g. '
                                                        '{"task": "steady", "seed": 7}'}


def test_a_seed_that_is_no_whole_number_is_an_invalid_seed():
    with operator_api() as (http, _sid):
        error = refusal(http.post("/operator/sessions", json={"task": "steady", "seed": 7.5}))
    assert error["code"] == "invalid_seed" and error["message"].startswith("7.5 is not a task seed")
