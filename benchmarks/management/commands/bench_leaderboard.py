"""Benchmark: the leaderboard page's response time on a study shaped like the paper's.

It builds, inside one transaction that is rolled back at the end (nothing stays), a
study of 33 cells (11 tasks x 3 seeds of the calibration file), 15 participants and
36 completed attempts (33 first attempts and 3 second attempts on cells with room for
two), with scores written on the attempts' shifts as a graded shift has them (a
synthetic fixture: no shift is played), then selects the latest attempt per cell.

It then times, in one run and one process, side by side:

- ``uncached_median_ms``: the leaderboard's figures computed without the cache
  (the 10,000-resample bootstrap each time: what every view cost before);
- ``first_view_ms``: the first GET of the page (computes and fills the cache);
- ``view_median_ms`` / ``view_p90_ms``: later GETs of the page (read from the cache),
  through Django's test client (in-process; no network), template included.

The cache is a fresh local-memory cache for the run, so earlier runs do not help.

    .venv/bin/python manage.py bench_leaderboard [--views 30] [--json]
"""
from __future__ import annotations

import json
import random
import statistics
import time
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test.utils import override_settings
from django.utils import timezone

from shifts.models import Shift
from studies import attempts as attempt_actions
from studies import settling
from studies.assignment import create_attempt
from studies.bots import SiteClient
from studies.design import _load, create_study, default_calibration_path
from studies.figures import Filters
from studies.leaderboard import leaderboard
from studies.models import Attempt
from studies.participants import add_participant

TASKS = 11
SEEDS = 3
PEOPLE = 15
SECOND_ATTEMPTS = 3


class _Rollback(Exception):
    pass


def build(admin) -> tuple:
    doc, _digest = _load(default_calibration_path())
    tasks = sorted(doc["tasks"])[:TASKS]
    seeds = sorted({int(s) for s in doc["tasks"][tasks[0]]})[:SEEDS]
    study = create_study(admin, f"bench-leaderboard-{timezone.now():%H%M%S%f}", tasks, seeds)
    User = get_user_model()
    people = []
    for i in range(PEOPLE):
        user = User.objects.create_user(f"bench-lb-{i}-{study.pk}")
        people.append(add_participant(admin, study, f"person {i}", user=user))
    cells = list(study.cells.all())
    for cell in cells[:SECOND_ATTEMPTS]:
        cell.quota = 2
        cell.save(update_fields=["quota"])
    rng = random.Random(7)
    plan = [(cell, people[i % PEOPLE]) for i, cell in enumerate(cells)]
    plan += [(cell, people[(i + 5) % PEOPLE]) for i, cell in enumerate(cells[:SECOND_ATTEMPTS])]
    now = timezone.now()
    for n, (cell, person) in enumerate(plan):
        attempt = create_attempt(admin, person, cell)
        composite = Decimal(rng.uniform(0.3, 0.95)).quantize(Decimal("0.000001"))
        components = {name: str(Decimal(rng.uniform(0, 1)).quantize(Decimal("0.000001")))
                      for name in ("business", "reliability", "on_time_rate", "return_handled_rate", "continuity")}
        components["threshold"] = str(cell.threshold)
        Shift.objects.filter(pk=attempt.shift_id).update(
            status=Shift.Status.ENDED, started_at=now, ended_at=now + timedelta(seconds=n),
            score_composite=composite, score_components=components, calibration_hash=study.calibration_hash,
            end_reason="submitted", passed=composite >= cell.threshold)
    settling.settle_study(study)
    attempt_actions.select_by_rule(admin, study, "latest", "benchmark fixture")
    return study, len(cells), Attempt.objects.filter(study=study).count()


class Command(BaseCommand):
    help = "Time the leaderboard page on a 33-cell, 36-attempt study (built and rolled back)."

    def add_arguments(self, parser):
        parser.add_argument("--views", type=int, default=30, help="cached page views to time (default 30)")
        parser.add_argument("--uncached", type=int, default=3, help="uncached computations to time (default 3)")
        parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")

    def handle(self, *args, **options):
        if options["views"] < 1 or options["uncached"] < 1:
            raise CommandError("--views and --uncached must be at least 1")
        caches = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                              "LOCATION": "bench-leaderboard"}}
        result: dict = {}
        with override_settings(CACHES=caches, ALLOWED_HOSTS=["testserver"]):
            try:
                with transaction.atomic():
                    result = self._run(options)
                    raise _Rollback
            except _Rollback:
                pass
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key}: {value}")

    def _run(self, options) -> dict:
        admin = get_user_model().objects.create_superuser(f"bench-lb-admin-{timezone.now():%H%M%S%f}",
                                                          password=None)
        study, cells, attempts = build(admin)
        uncached = []
        for _ in range(options["uncached"]):
            t0 = time.perf_counter()
            leaderboard(admin, study, filters=Filters(), use_cache=False)
            uncached.append((time.perf_counter() - t0) * 1000)
        client = SiteClient()
        client.force_login(admin)
        url = f"/studies/{study.pk}/leaderboard/"
        t0 = time.perf_counter()
        first = client.get(url)
        first_ms = (time.perf_counter() - t0) * 1000
        if first.status_code != 200:
            raise CommandError(f"the leaderboard answered {first.status_code}")
        views = []
        for _ in range(options["views"]):
            t0 = time.perf_counter()
            response = client.get(url)
            views.append((time.perf_counter() - t0) * 1000)
            if response.status_code != 200:
                raise CommandError(f"the leaderboard answered {response.status_code}")
        views.sort()
        median = statistics.median(views)
        return {
            "cells": cells, "attempts": attempts,
            "uncached_median_ms": round(statistics.median(uncached), 1),
            "first_view_ms": round(first_ms, 1),
            "view_median_ms": round(median, 1),
            "view_p90_ms": round(views[max(0, int(len(views) * 0.9) - 1)], 1),
            "speedup_uncached_over_view": round(statistics.median(uncached) / median, 1),
            "views": len(views),
        }
