"""Cheap search over action sequences runs through the tool surface and is graded
against the cell's calibration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from environment.calibration import cell_of, load_calibration
from environment.rand import Stream
from environment.search import random_genome, search

REPO = Path(__file__).resolve().parents[1]


def test_hill_climbing_never_gets_worse_and_stays_below_the_threshold():
    doc, _ = load_calibration(REPO / "calibration" / "public.json")
    cell = cell_of(doc, "counter-punch", 7)
    result = search("hill", "counter-punch", 7, cell, 6)
    assert result.episodes == 6 and len(result.history) == 6
    assert result.history == sorted(result.history)  # best-so-far is monotone
    assert result.best < cell["threshold"]


def test_progress_is_reported_for_every_episode_from_the_first():
    doc, _ = load_calibration(REPO / "calibration" / "public.json")
    seen: list[int] = []
    search("random", "counter-punch", 7, cell_of(doc, "counter-punch", 7), 2, progress=lambda done, _best: seen.append(done))
    assert seen == [1, 2]


def test_genomes_are_reproducible_from_their_seed():
    a = random_genome(Stream.of("search", "random", 3), 4, 5)
    b = random_genome(Stream.of("search", "random", 3), 4, 5)
    assert a == b and len(a) == 4 and all(len(g) == 5 for g in a)


def test_cli_reports_the_best_composite_and_the_threshold():
    proc = subprocess.run([sys.executable, "-m", "environment", "search", "--method", "random", "--task",
                           "counter-punch", "--seed", "11", "--episodes", "3", "--calibration",
                           str(REPO / "calibration" / "public.json"), "--json"], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["method"] == "random" and out["episodes"] == 3
    assert 0 <= out["best_composite"] < out["threshold"]
    assert "[3/3]" in proc.stderr
