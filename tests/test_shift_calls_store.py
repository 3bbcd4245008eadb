"""A call is stored by one prepared INSERT (shifts.calls._insert) and read by one locked
read: the row is the one the ORM would have written, and the shift is brought up to date
from the database exactly as the ORM would load it."""
import uuid
from decimal import Decimal

import pytest
from console_helpers import briefed_user
from django.db import connection, transaction
from django.db.models import signals

from environment.tasks import get_task
from shifts import calls, events, lifecycle
from shifts.models import Shift, ShiftCall

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_console_cache")]


@pytest.fixture
def started():
    user = briefed_user("storer", password=False)
    return user, lifecycle.start_shift(user, "counter-punch", 7, practice=True)


def test_a_stored_call_is_the_row_the_orm_reads_back(started):
    user, shift = started
    made = calls.make_call(Shift(pk=shift.pk), "list_orders", {"page_size": 2, "status": "all"}, uuid.uuid4().hex,
                           owner=user.pk)
    stored = ShiftCall.objects.get(pk=made.call.pk)
    assert not made.call._state.adding and made.call._state.db == "default"
    for field in ShiftCall._meta.concrete_fields:
        assert getattr(stored, field.attname) == getattr(made.call, field.attname), field.name
    assert stored.arguments == {"page_size": 2, "status": "all"} and stored.store_header["ops_left"] == get_task("counter-punch").ops_per_window - 1
    assert stored.created_at is not None and stored.seq == made.call.seq


def test_a_receiver_of_the_save_signal_gets_the_orm_save(started):
    user, shift = started
    seen = []

    def saved(sender, instance, created, **kwargs):
        seen.append((instance.tool, created))

    signals.post_save.connect(saved, sender=ShiftCall)
    try:
        calls.make_call(Shift(pk=shift.pk), "store_status", {}, uuid.uuid4().hex, owner=user.pk)
    finally:
        signals.post_save.disconnect(saved, sender=ShiftCall)
    assert seen == [("store_status", True)]


def test_the_locked_read_loads_the_shift_as_the_orm_does(started):
    user, shift = started
    Shift.objects.filter(pk=shift.pk).update(score_composite=Decimal("0.512345"), score_components={"a": "1"},
                                             timeline=[{"window": 1}], passed=True)
    fresh = Shift(pk=shift.pk)
    calls.make_call(fresh, "store_status", {}, uuid.uuid4().hex, owner=user.pk)
    loaded = Shift.objects.get(pk=shift.pk)
    for field in Shift._meta.concrete_fields:
        assert getattr(fresh, field.attname) == getattr(loaded, field.attname), field.name
        assert type(getattr(fresh, field.attname)) is type(getattr(loaded, field.attname)), field.name


def test_someone_elses_shift_is_not_found(started):
    _user, shift = started
    other = briefed_user("other", password=False)
    with pytest.raises(Shift.DoesNotExist):
        calls.make_call(Shift(pk=shift.pk), "store_status", {}, uuid.uuid4().hex, owner=other.pk)


@pytest.mark.django_db(transaction=True)
def test_a_call_inside_an_enclosing_transaction_is_undone_with_it(started):
    """The call's block is then a savepoint: the store must not commit the enclosing work."""
    user, shift = started
    call_id = uuid.uuid4().hex
    with pytest.raises(RuntimeError, match="undo"), transaction.atomic():
        Shift.objects.filter(pk=shift.pk).update(release="marker")
        calls.make_call(Shift(pk=shift.pk), "store_status", {}, call_id, owner=user.pk)
        raise RuntimeError("undo")
    assert not ShiftCall.objects.filter(call_id=call_id).exists()
    assert Shift.objects.get(pk=shift.pk).release != "marker"


@pytest.mark.django_db(transaction=True)
def test_an_outermost_call_is_stored_and_announced_after_its_commit(started, monkeypatch):
    user, shift = started
    sent = []
    monkeypatch.setattr(events, "_send", lambda shift_id, message: sent.append(
        (shift_id, message["seq"], connection.in_atomic_block)))
    statements = []

    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        made = calls.make_call(Shift(pk=shift.pk), "store_status", {}, uuid.uuid4().hex, owner=user.pk)
    assert sent == [(shift.pk, made.call.seq, False)]
    assert ShiftCall.objects.filter(pk=made.call.pk, call_id=made.call.call_id).exists()
    insert = statements[-1]  # the transaction's last statement: nothing may follow a commit made in it
    assert insert.startswith("INSERT")
    if connection.vendor == "postgresql":  # stored and committed in one round trip
        assert insert.endswith("; COMMIT")
    else:
        assert "COMMIT" not in insert


@pytest.mark.django_db(transaction=True)
def test_a_call_made_with_autocommit_off_is_committed_by_the_caller(started):
    user, shift = started
    call_id = uuid.uuid4().hex
    transaction.set_autocommit(False)
    try:
        Shift.objects.filter(pk=shift.pk).update(release="marker")
        calls.make_call(Shift(pk=shift.pk), "store_status", {}, call_id, owner=user.pk)
        transaction.rollback()
    finally:
        transaction.set_autocommit(True)
    assert not ShiftCall.objects.filter(call_id=call_id).exists()
    assert Shift.objects.get(pk=shift.pk).release != "marker"
