"""A rehearsal attempt's claim (studies.bots.claim) against PostgreSQL: of many
deliveries claiming one attempt at the same moment, each on its own connection, exactly
one gets it (one conditional UPDATE; the others wait for its row lock, re-check the
condition and match nothing)."""
import threading

import pytest
from django.db import connection
from test_studies_support import admin, study  # noqa: F401

from studies import assignment, bots

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
DELIVERIES = 8


def test_of_deliveries_claiming_one_attempt_at_once_exactly_one_gets_it(admin, study):  # noqa: F811
    if connection.vendor != "postgresql":
        pytest.fail("this race needs PostgreSQL (make test-services sets DATABASE_URL)")
    attempt = assignment.assign_next(admin, study, [bots.add_bot(admin, study, "b")], include_bots=True,
                                     reason="rehearsal", rehearsal="r-race")
    start = threading.Barrier(DELIVERIES)
    got: list[bots.Claim | None] = []
    lock = threading.Lock()

    def delivery() -> None:
        try:
            start.wait()
            held = bots.claim(attempt)
            with lock:
                got.append(held)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=delivery) for _ in range(DELIVERIES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(got) == DELIVERIES
    winners = [held for held in got if held is not None]
    assert len(winners) == 1
    attempt.refresh_from_db()
    assert attempt.claim_token == winners[0].token
