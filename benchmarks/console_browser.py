"""Benchmark: a whole steady shift played through the console in a real browser.

``python -m benchmarks.console_browser [--windows N] [--task steady --seed 3] [--json]``

What it does:

1. Starts the console as ``make run`` does (``uvicorn config.asgi:application`` on a
   loopback port, 8160 unless ``--port``) over a fresh SQLite file in a temporary folder,
   after ``manage.py migrate``; makes one participant past the briefing and practice
   with a started scored shift on the cell.
2. Drives chromium (``/usr/bin/chromium`` through Playwright, headless) with a
   smart-triage-like player that uses only the page's controls: the quick-read
   buttons, the row buttons (Refund on returns, Ship on in-stock orders, Reorder on
   inventory lines that run low, with the prefilled vendor minimum), the End window
   button and, at the end, End the shift.  Every click, every field filled and every
   confirmation accepted counts as an input (the player fills no field: the row
   actions' prefilled values are used).
3. Reads the shift's stored calls and graded components back from the server's
   database (``manage.py shell``), replays the calls in this process on the engine
   (:func:`environment.trial.play_actions` on a fresh episode), and checks that
   - the ledger of the in-process play equals the ledger of the server's own replay
     of its stored calls (SHA-256 of the JSONL ledger), and
   - the components the server graded from its live episode when the shift ended
     (net assets, business, reliability, continuity, composite) equal the in-process
     grade of the same calls against the same calibration cell.

It prints the wall time of the browser play, the operations spent, the inputs per
operation and whether the ledgers match.  A full steady shift is 60 windows of 20
operations; ``--windows N`` ends the shift after N windows (the rest settle unplayed),
for a loaded machine or a quick check (``tests/browser/test_console_browser_bench.py`` runs 2).

Nothing is asserted on time: figures are printed.  Exit status 1 when the ledgers or
the graded components differ.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path

from .console_process import ConsoleProcess, ConsoleProcessError

CHROMIUM = Path(os.environ.get("STOREBENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
USERNAME, PASSWORD = "bench-player", "bench-player-pw-1"
LOW_STOCK = 12  # units available under which an inventory line is reordered
REORDER_EVERY = 4  # windows between inventory reviews
COMPARED = ("net_assets", "business_raw", "business", "reliability", "continuity", "reward_composite")


class BenchError(ConsoleProcessError):
    """The benchmark could not run (no chromium, the server would not start, ...)."""


# --- the server ------------------------------------------------------------------------------

class Console(ConsoleProcess):
    """``make run``'s server on a SQLite file of its own, on a port that must be free."""

    def shell(self, code: str) -> str:
        return super().shell(code).strip().splitlines()[-1]  # the last line printed: the answer

    def start(self, timeout: float = 60) -> None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                raise BenchError(f"port {self.port} is taken; choose another with --port")
        super().start(timeout)


def prepare(console: Console, task: str, seed: int) -> int:
    """A participant past the briefing and practice, with a started scored shift; its id."""
    console.manage("migrate", "--noinput")
    return console.ready_participant(USERNAME, PASSWORD, task, seed)


# --- the player --------------------------------------------------------------------------------

@dataclass
class Play:
    inputs: int = 0
    windows: int = 0
    actions: dict = field(default_factory=dict)  # tool -> row actions pressed


def _number(text: str | None) -> float:
    """A table cell's number ("1,204", "6.2 h", "-3.0 h"); a missing cell sorts last."""
    try:
        return float((text or "").split(" ")[0].replace(",", ""))
    except ValueError:
        return float("inf")


class Player:
    """A smart-triage-like operator that sees only the page: urgent work first (returns,
    then orders in stock, soonest deadline first), then low stock, then the next window."""

    def __init__(self, page) -> None:
        self.page = page
        self.play = Play()
        page.on("dialog", self._accept)

    def _accept(self, dialog) -> None:
        self.play.inputs += 1  # a confirmation is an input (the last operation, End window)
        dialog.accept()

    def click(self, locator) -> None:
        self.play.inputs += 1
        locator.click()

    def header(self, name: str) -> int:
        value = self.page.get_attribute("#store-header", f"data-{name}") if self.open() else ""
        return int(value) if value else 0

    def open(self) -> bool:
        return self.page.locator("#end-page").count() == 0 and self.page.locator("#store-header").count() == 1

    def _wait_seq(self, before: int) -> None:
        self.page.wait_for_function(
            "(b) => document.querySelector('#end-page') || (document.querySelector('#result .result') && "
            "Number(document.querySelector('#result .result').dataset.seq) > b)", arg=before)

    def quick(self, tool: str) -> None:
        before = self.page.evaluate(
            "() => Number((document.querySelector('#result .result') || {dataset: {}}).dataset.seq || 0)")
        self.click(self.page.locator(f".quick-bar button[data-tool={tool}]"))
        self._wait_seq(before)

    def act(self, key: str, tool: str) -> bool:
        row = self.page.locator(f'#result tr[data-key="{key}"]')
        form = row.locator(f"form.row-action[data-tool={tool}]")
        if form.count() == 0:
            return False
        self.click(form.locator("button"))
        self.page.wait_for_function(
            "(k) => document.querySelector('#end-page') || "
            "document.querySelector(`#result tr[data-key=\"${k}\"] .row-status .outcome`)", arg=key)
        self.play.actions[tool] = self.play.actions.get(tool, 0) + 1
        return True

    def rows(self, tool: str) -> list[dict]:
        """The shown table's rows that carry ``tool``'s action: key, the cells' text by column."""
        return self.page.evaluate(
            """(tool) => {
                const table = document.querySelector('#result table.result-table');
                if (!table) return [];
                const heads = [...table.tHead.rows[0].cells].map(c => c.textContent.trim().split(' ')[0]);
                return [...table.tBodies[0].rows].filter(r => r.querySelector(`form.row-action[data-tool=${tool}]`))
                  .map(r => ({key: r.dataset.key, late: !!r.querySelector('form.row-action[data-late]'),
                              cells: Object.fromEntries([...r.cells].map((c, i) => [heads[i], c.textContent.trim()]))}));
            }""", tool)

    def window(self, number: int) -> None:
        self.play.windows += 1
        start = self.header("window")
        if number == 1:
            self.quick("search_supply_catalog")  # where each line is restocked from: Reorder on inventory rows
        if self.open() and self.header("ops-left") > 2:
            self.quick("list_returns")
            for row in self.rows("refund_return"):
                if not self.open() or self.header("ops-left") <= 2 or self.header("window") != start:
                    break
                self.act(row["key"], "refund_return")
        if self.open() and self.header("ops-left") > 1 and self.header("window") == start:
            self.quick("list_orders")
            orders = sorted(self.rows("fulfill_order"), key=lambda r: _number(r["cells"].get("hours")))
            for row in orders:
                if not self.open() or self.header("ops-left") <= 1 or self.header("window") != start:
                    break
                if row["cells"].get("in") == "yes":
                    self.act(row["key"], "fulfill_order")
        if (number % REORDER_EVERY == 1 and self.open() and self.header("ops-left") > 3
                and self.header("window") == start):
            self.quick("list_inventory")
            low = [r for r in self.rows("place_purchase_order") if not r["late"]
                   and _number(r["cells"].get("available")) < LOW_STOCK and _number(r["cells"].get("incoming")) == 0]
            for row in low[:2]:
                if not self.open() or self.header("ops-left") <= 1 or self.header("window") != start:
                    break
                self.act(row["key"], "place_purchase_order")
        if self.open() and self.header("window") == start:
            self.quick("end_window")

    def end_shift(self) -> None:
        if self.page.locator("form.end-shift button").count():
            self.click(self.page.locator("form.end-shift button"))
        self.page.wait_for_selector("#end-page")


def drive(url: str, shift: int, windows: int) -> tuple[Play, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 800})
        context.set_default_timeout(60_000)
        page = context.new_page()
        page.goto("/login/")
        page.fill("input[name=username]", USERNAME)
        page.fill("input[name=password]", PASSWORD)
        page.click("form.stacked button[type=submit]")
        page.wait_for_url("**/")
        page.goto(f"/shifts/{shift}/")  # signing in and opening the page are not counted
        player = Player(page)
        started = time.perf_counter()
        for number in range(1, windows + 1):
            if not player.open():
                break
            player.window(number)
        player.end_shift()
        wall = time.perf_counter() - started
        browser.close()
    return player.play, wall


# --- the check ---------------------------------------------------------------------------------

def ledger_hash(ep) -> str:
    return "sha256:" + hashlib.sha256(ep.ledger.to_jsonl().encode()).hexdigest()


def server_record(console: Console, shift: int) -> dict:
    """What the server stored: the calls that reached the store, the graded components,
    the calibration cell, and the ledger of its own replay of the stored calls."""
    return json.loads(console.shell(
        "import hashlib, json\n"
        "from shifts.cache import replay_episode, replayable\n"
        "from shifts.grading import grading_cell\n"
        "from shifts.models import Shift\n"
        f"s = Shift.objects.get(pk={shift})\n"
        "ep = replay_episode(s)\n"
        "ep.stop() if not ep.over else None\n"
        "print(json.dumps({'task': s.task_id, 'seed': s.seed, 'status': s.status, 'actions': replayable(s),"
        " 'calls': s.calls.count(), 'spent': sum(c.spent_operation for c in s.calls.all()),"
        " 'components': s.score_components, 'cell': grading_cell(s.task_id, s.seed)[0],"
        " 'ledger': 'sha256:' + hashlib.sha256(ep.ledger.to_jsonl().encode()).hexdigest()}, default=str))\n"))


def in_process(record: dict) -> tuple[str, dict]:
    from environment.api import arm, grade
    from environment.trial import play_actions

    ep = play_actions(arm(record["task"], record["seed"]), record["actions"], stop=True)
    graded = {k: str(v) if isinstance(v, Decimal) else v for k, v in asdict(grade(ep, record["cell"])).items()}
    return ledger_hash(ep), graded


@dataclass
class Result:
    task: str
    seed: int
    windows_played: int
    wall_seconds: float
    calls: int
    operations: int
    inputs: int
    inputs_per_operation: float
    row_actions: dict
    composite: str  # the server's grade of the shift (its pass or not is not the benchmark's concern)
    ledger_server: str
    ledger_in_process: str
    ledgers_match: bool
    components_match: bool
    mismatched: dict

    @property
    def ok(self) -> bool:
        return self.ledgers_match and self.components_match


def run(task: str = "steady", seed: int = 3, windows: int = 60, port: int = 8160,
        progress=lambda msg: None) -> Result:
    if not CHROMIUM.exists():
        raise BenchError(f"{CHROMIUM} is missing: the browser benchmark needs Debian's chromium "
                         "(apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="console-browser-") as tmp:
        console = Console(Path(tmp), port)
        progress("migrating a fresh database")
        shift = prepare(console, task, seed)
        console.start()
        try:
            progress(f"playing {task} seed {seed} for {windows} windows in chromium")
            play, wall = drive(console.url, shift, windows)
        finally:
            console.stop()
        progress("replaying the stored calls in-process")
        record = server_record(console, shift)
    ledger, graded = in_process(record)
    stored = record["components"]
    mismatched = {k: [stored.get(k), graded.get(k)] for k in COMPARED
                  if Decimal(str(stored.get(k))) != Decimal(str(graded.get(k)))}
    spent = int(record["spent"])
    return Result(task=task, seed=seed, windows_played=play.windows, wall_seconds=round(wall, 1),
                  calls=int(record["calls"]), operations=spent, inputs=play.inputs,
                  inputs_per_operation=round(play.inputs / max(1, spent), 3), row_actions=play.actions,
                  composite=str(stored.get("reward_composite")),
                  ledger_server=record["ledger"], ledger_in_process=ledger,
                  ledgers_match=record["ledger"] == ledger, components_match=not mismatched, mismatched=mismatched)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.console_browser", description=(
        "Play a steady shift through the console in chromium with a smart-triage-like player using only the "
        "page's controls, then replay its calls in-process and compare ledgers; prints wall time, operations "
        "and inputs per operation."))
    parser.add_argument("--task", default="steady")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--windows", type=int, default=60, help="windows to play before ending the shift (default 60)")
    parser.add_argument("--port", type=int, default=8160, help="loopback port for the console (default 8160)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    try:
        result = run(args.task, args.seed, args.windows, args.port,
                     progress=lambda msg: print(f"console-browser: {msg}", file=sys.stderr, flush=True))
    except ConsoleProcessError as exc:  # BenchError among them
        print(f"console-browser: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**asdict(result), "ok": result.ok}, indent=2))
    else:
        print(f"{result.task} seed {result.seed}: {result.windows_played} windows in {result.wall_seconds} s; "
              f"{result.calls} calls, {result.operations} operations, {result.inputs} inputs "
              f"({result.inputs_per_operation} per operation); row actions {result.row_actions}; "
              f"composite {result.composite}")
        print(f"ledger server {result.ledger_server}")
        print(f"ledger in-process {result.ledger_in_process}")
        print(f"ledgers match: {result.ledgers_match}; graded components match: {result.components_match}"
              + (f" {result.mismatched}" if result.mismatched else ""))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
