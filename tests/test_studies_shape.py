"""The paper's study shape, built from bot shifts played through the console's views.

15 participants, 33 cells (the 11 evaluation lenses other than full-year, seeds 7,
11, 13), 36 completed attempts (33 first attempts, two coached retries, one
reassignment after a platform fault), 33 selected; one person supplies ten attempts
and four people one each.  The figures are recomputed here from the raw attempt rows.
"""
import math
import random
import time
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from studies import attempts, bots, reference
from studies.assignment import assign
from studies.design import create_study
from studies.figures import Filters, study_figures
from studies.models import Attempt, AttemptKind, AttemptStatus, SelectionRule

TASKS = ["black-swan", "cold-start", "liquidity", "new-entrant", "peak-season", "perfect-storm",
         "quality-crisis", "slow-drift", "steady", "supply-shock", "trade-war"]
SEEDS = [7, 11, 13]
Q = Decimal("0.000001")

# person -> (skill, number of first attempts); P06 and P07 also get a coached retry,
# P08's only attempt is the reassignment of P09's faulty one.
PEOPLE = {"P01": ("novice", 10), "P02": ("expert", 1), "P03": ("expert", 1), "P04": ("expert", 1),
          "P05": ("expert", 1), "P06": ("novice", 2), "P07": ("novice", 2), "P08": ("clerk", 1),
          **{f"P{i:02d}": ("clerk", 2) for i in range(9, 16)}}


def q6(x):
    return x.quantize(Q, rounding=ROUND_HALF_EVEN)


@pytest.fixture(scope="module")
def built(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        atomic = transaction.atomic()  # the module's data, rolled back at teardown
        atomic.__enter__()
        started = time.perf_counter()
        admin = get_user_model().objects.create_superuser("shape-admin", password=None)
        study = create_study(admin, "Paper shape", TASKS, SEEDS, random_seed=7)
        people = {label: bots.add_bot(admin, study, label) for label in PEOPLE}
        cells = list(study.cells.order_by("task_id", "seed"))
        queue = iter(cells)
        first = {}
        for label, (skill, n) in PEOPLE.items():
            for _ in range(n):
                cell = next(queue)
                first[cell.pk] = bots.play(assign(admin, people[label], cell), "idle" if label in ("P06", "P07") else skill)
        assert next(queue, None) is None
        for label in ("P06", "P07"):
            faulty = Attempt.objects.filter(participant=people[label]).order_by("number", "pk").first()
            bots.play(attempts.grant_coached_retry(admin, faulty, "ship first, then refund"), "expert")
        fault = Attempt.objects.filter(participant=people["P09"]).first()
        bots.play(attempts.reassign(admin, fault, people["P08"], "store crashed mid-shift"), "clerk")
        attempts.select_by_rule(admin, study, SelectionRule.LATEST, include_bots=True)
        figures = study_figures(admin, study, Filters(include_bots=True))
        elapsed = time.perf_counter() - started
        try:
            yield {"study": study, "admin": admin, "figures": figures, "elapsed": elapsed}
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def raw_rows(study):
    out = []
    for a in Attempt.objects.filter(study=study).select_related("cell", "participant"):
        out.append({"cell": a.cell.key, "task": a.cell.task_id, "person": a.participant.label,
                    "composite": a.composite, "selected": a.is_selected, "status": a.status,
                    "kind": a.kind, "threshold": a.cell.threshold, "order": (a.completed_at, a.number),
                    "business": a.business})
    return out


@pytest.mark.django_db
def test_shape_counts(built):
    rows = raw_rows(built["study"])
    completed = [r for r in rows if r["status"] in (AttemptStatus.SUBMITTED, AttemptStatus.TIMED_OUT)]
    assert len(completed) == 36
    assert len({r["cell"] for r in rows}) == 33
    assert sum(r["selected"] for r in rows) == 33
    assert sorted(r["kind"] for r in rows).count(AttemptKind.COACHED_RETRY) == 2
    assert sorted(r["kind"] for r in rows).count(AttemptKind.REASSIGNMENT) == 1
    per_person = defaultdict(int)
    for r in completed:
        per_person[r["person"]] += 1
    assert len(per_person) == 15 and max(per_person.values()) == 10
    assert sorted(per_person.values()).count(1) == 4
    print(f"\nstudy shape built in {built['elapsed']:.1f} s (measured, not asserted)")


@pytest.mark.django_db
def test_three_means_recomputed_from_raw_rows(built):
    rows = raw_rows(built["study"])
    selected = [r for r in rows if r["selected"]]
    equal_cell = q6(sum(r["composite"] for r in selected) / len(selected))
    per_person = defaultdict(list)
    for r in selected:
        per_person[r["person"]].append(r["composite"])
    equal_person = q6(sum(q6(sum(v) / len(v)) for v in per_person.values()) / len(per_person))
    by_cell = defaultdict(list)
    for r in rows:
        by_cell[r["cell"]].append(r)
    earliest = q6(sum(min(v, key=lambda r: r["order"])["composite"] for v in by_cell.values()) / len(by_cell))
    f = built["figures"]
    print(f"\nequal-cell {f.equal_cell}\nequal-person {f.equal_person}\nearliest {f.earliest}\n"
          f"pass rate {f.pass_rate}\ncomponents {f.components}\n"
          + "\n".join(f"task {t}: {e.value} [{e.low}, {e.high}]" for t, e in f.per_task.items()))
    assert (f.equal_cell.value, f.equal_person.value, f.earliest.value) == (equal_cell, equal_person, earliest)


@pytest.mark.django_db
def test_equal_person_mean_exceeds_equal_cell_mean_when_the_heavy_contributor_scores_low(built):
    rows = raw_rows(built["study"])
    heavy = [r["composite"] for r in rows if r["selected"] and r["person"] == "P01"]
    others = [r["composite"] for r in rows if r["selected"] and r["person"] != "P01"]
    assert sum(heavy) / len(heavy) < sum(others) / len(others)  # what the data implies ...
    f = built["figures"]
    assert f.equal_person.value > f.equal_cell.value  # ... and what the figures show


@pytest.mark.django_db
def test_earliest_attempt_mean_is_below_equal_cell_mean_after_retries(built):
    f = built["figures"]
    assert f.earliest.value < f.equal_cell.value


@pytest.mark.django_db
def test_per_task_table_recomputed(built):
    rows = raw_rows(built["study"])
    f = built["figures"]
    assert sorted(f.per_task) == TASKS
    for task in TASKS:
        values = [r["composite"] for r in rows if r["selected"] and r["task"] == task]
        assert len(values) == 3
        assert f.per_task[task].value == q6(sum(values) / 3)


@pytest.mark.django_db
def test_equal_cell_interval_recomputed_by_bootstrap_over_cells(built):
    rows = raw_rows(built["study"])
    selected = sorted((r for r in rows if r["selected"]), key=lambda r: r["cell"])
    values = [float(r["composite"]) for r in selected]
    rng = random.Random(reference.DEFAULT_SEED)
    stats = sorted(math.fsum(values[i] for i in rng.choices(range(33), k=33)) / 33 for _ in range(10_000))
    low, high = stats[249], stats[9749]
    f = built["figures"]
    assert (f.equal_cell.low, f.equal_cell.high) == (q6(Decimal(repr(low))), q6(Decimal(repr(high))))
    assert f.equal_cell.low < f.equal_cell.value < f.equal_cell.high
    assert f.resamples == 10_000


@pytest.mark.django_db
def test_equal_person_interval_recomputed_by_bootstrap_over_cells(built):
    rows = raw_rows(built["study"])
    selected = sorted((r for r in rows if r["selected"]), key=lambda r: r["cell"])
    rng = random.Random(reference.DEFAULT_SEED)
    stats = []
    for _ in range(10_000):
        per = defaultdict(list)
        for i in rng.choices(range(33), k=33):
            per[selected[i]["person"]].append(float(selected[i]["composite"]))
        stats.append(math.fsum(math.fsum(v) / len(v) for v in per.values()) / len(per))
    stats.sort()
    f = built["figures"]
    assert (f.equal_person.low, f.equal_person.high) == (q6(Decimal(repr(stats[249]))), q6(Decimal(repr(stats[9749]))))


@pytest.mark.django_db
def test_per_task_interval_resamples_that_tasks_cells(built):
    rows = raw_rows(built["study"])
    values = [float(r["composite"]) for r in sorted((r for r in rows if r["selected"] and r["task"] == "steady"),
                                                    key=lambda r: r["cell"])]
    rng = random.Random(f"{reference.DEFAULT_SEED}/task/steady")
    stats = sorted(math.fsum(values[i] for i in rng.choices(range(3), k=3)) / 3 for _ in range(10_000))
    est = built["figures"].per_task["steady"]
    assert (est.low, est.high) == (q6(Decimal(repr(stats[249]))), q6(Decimal(repr(stats[9749]))))


@pytest.mark.django_db
def test_leaderboard_puts_model_trials_beside_humans_and_anchors(built):
    from studies.leaderboard import leaderboard

    trials = [("steady/7", Decimal("0.5"), "model-x"), ("steady/11", Decimal("0.7"), "model-x"),
              ("not-a/cell", Decimal("1"), "model-x")]
    entries, _ = leaderboard(built["admin"], built["study"], trials=trials, filters=Filters(include_bots=True))
    by_name = {e.name: e for e in entries}
    assert by_name["model-x"].estimate.value == Decimal("0.600000") and by_name["model-x"].estimate.n == 2
    assert by_name["Participants, bots included (equal-cell mean)"].estimate == built["figures"].equal_cell
    assert {"smart-triage", "rule-based", "blast-list"} <= set(by_name)
