"""Acceptance for the Ostrelle world: headline figures, audits, a deterministic hash,
and refusal of any world that does not hash to the recorded one.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from environment.world.loader import WorldHashMismatch, export_world, load_world, recorded_hash
from environment.world.model import World

REPO_ROOT = Path(__file__).resolve().parents[1]
ZERO_HASH = "sha256:" + "0" * 64


def storebench(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "environment", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, env=env)


def run_json(*args: str, env: dict | None = None) -> dict:
    proc = storebench(*args, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def world() -> World:
    return load_world()


@pytest.fixture
def tampered(world, tmp_path) -> Path:
    """An export with one variant's stock bumped by one unit."""
    path = tmp_path / "w.json"
    export_world(world, path)
    doc = json.loads(path.read_text())
    doc["variants"][0]["stock"] += 1
    path.write_text(json.dumps(doc))
    return path


# --- CLI: stats, audit, hash -------------------------------------------------------


def test_world_stats_headline_figures():
    stats = run_json("world", "stats", "--json")
    assert stats["supply_lines"] == 111
    assert stats["variants"] == 3448
    assert stats["vendors"] == 40
    assert stats["history_orders"] == 3320
    assert 5000 <= stats["supply_skus"] <= 5400
    assert 2375 <= stats["customers"] <= 2625
    assert 0.142 <= stats["return_rate"] <= 0.152
    assert stats["world_hash"] == recorded_hash()


def test_world_audit_all_pass():
    report = run_json("world", "audit", "--json")
    failed = [f"{a['name']}: {a['detail']}" for a in report["audits"] if not a["passed"]]
    assert report["passed"] == report["total"], "failing audits:\n" + "\n".join(failed)
    assert report["total"] >= 31
    assert len(report["audits"]) == report["total"]
    for entry in report["audits"]:
        assert {"name", "passed", "detail"} <= set(entry), entry
        assert entry["name"] and entry["detail"]


def test_world_hash_is_deterministic_across_processes():
    reports = []
    for hash_seed in ("1", "2"):  # differing str hashing must not change the world
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        reports.append(run_json("world", "hash", "--json", env=env))
    first, second = reports
    assert first["generated"] == second["generated"] == recorded_hash()
    assert first["recorded"] == recorded_hash()
    assert first["matches"] is True and second["matches"] is True


# --- loading and refusing ------------------------------------------------------------


def test_export_round_trips(world, tmp_path):
    path = tmp_path / "w.json"
    export_world(world, path)
    assert load_world(path) == world


def test_gz_export_round_trips(world, tmp_path):
    path, plain = tmp_path / "w.json.gz", tmp_path / "plain.json"
    export_world(world, path)
    export_world(world, plain)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(path.read_bytes()) == plain.read_bytes()
    assert load_world(path) == world


def test_cli_export_loads(world, tmp_path):
    path = tmp_path / "cli.json.gz"
    proc = storebench("world", "export", str(path))
    assert proc.returncode == 0, proc.stderr
    assert load_world(path) == world


def test_tampered_export_is_refused(tampered):
    with pytest.raises(WorldHashMismatch) as info:
        load_world(tampered)
    message = str(info.value)
    assert message.count("sha256:") >= 2
    assert recorded_hash() in message
    assert "refusing" in message


def test_unexpected_hash_is_refused_in_a_fresh_process():
    code = ("from environment.world.loader import load_world, WorldHashMismatch\n"
            "try:\n"
            f"    load_world(expected_hash={ZERO_HASH!r})\n"
            "except WorldHashMismatch as exc:\n"
            "    print(exc)\n"
            "else:\n"
            "    raise SystemExit('not refused')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert ZERO_HASH in proc.stdout and "refusing" in proc.stdout


def test_unexpected_hash_is_refused_after_the_world_is_cached(world):
    assert load_world() is world  # the generated world is cached in this process
    try:
        load_world(expected_hash=ZERO_HASH)
    except WorldHashMismatch as exc:
        assert "refusing" in str(exc)
    else:
        raise AssertionError("load_world(expected_hash=...) did not refuse a mismatching hash")


def test_cli_refuses_a_tampered_world(tampered):
    proc = storebench("world", "stats", "--world", str(tampered))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("storebench:")
    assert "refusing" in proc.stderr


def test_a_copied_world_builds_its_own_lookups(world):
    """dataclasses.replace must not hand a copy the original's id index."""
    from dataclasses import replace

    first = world.variants[0]
    copy = replace(world, variants=(replace(first, stock=first.stock + 5),) + world.variants[1:])
    assert copy.by_id("variants")[first.id].stock == first.stock + 5
    assert world.by_id("variants")[first.id].stock == first.stock


def test_no_title_repeats_a_word(world):
    """A material word the garment's name repeats is said once: a "Cotton Oxford Shirt",
    not a "Cotton Oxford Oxford Shirt" (19 of the 133 designs read so before)."""
    titles = [p.title for p in world.products] + [sp.title for sp in world.supply_products]
    repeated = sorted({t for t in titles if len(set(t.lower().split())) < len(t.split())})
    assert repeated == []
    assert "Cotton Oxford Shirt" in {p.title for p in world.products} | {sp.title for sp in world.supply_products}


def test_listed_titles_are_distinct(world):
    titles = [p.title for p in world.products]
    assert len(titles) == len(set(titles)) == 111


def test_every_designs_title_is_distinct_listed_or_not():
    # Designs are told apart by key (the title before a repeated word was dropped); two keys
    # must never give one title, or a listed line and a market offer would read alike.
    from environment.world.generate import _designs

    titles = [d.title for d in _designs()]
    assert len(titles) == len(set(titles)) == 133
