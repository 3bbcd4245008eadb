"""``storebench``: the command line of the environment core.

The installed ``storebench`` command is :mod:`mcp_client.cli`, which registers every
subcommand here and adds those that need the MCP SDK (``mcp``, ``agent``); this module
never imports anything above the core.  ``python -m environment`` runs the core's
commands alone.

Subcommands grow with the project; each one is a thin shell over a core function
and prints JSON with ``--json`` for scripts, readable text otherwise.  A refusal
by the core (a :class:`~environment.errors.StoreBenchError`) prints its message
and exits 2; a failed check exits 1.
"""

from __future__ import annotations

import argparse
import errno
import json
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar, cast

from .errors import InvalidSeed, StoreBenchError, check_seed

TASKS_HELP = "task ids, or all, eval (the evaluation lenses) or train (the training tasks)"


def _print_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def seed_arg(text: str) -> int:
    """argparse type: a task seed (see :func:`environment.errors.check_seed`)."""
    try:
        return check_seed(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; a seed is e.g. 7, 11 or 13") from None
    except InvalidSeed as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def whole_number(minimum: int) -> Callable[[str], int]:
    """argparse type: a whole number of ``minimum`` or more."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is too small: give {minimum} or more")
        return value

    return parse


positive_int = whole_number(1)


def pool_size(workers: int, items: int) -> int:
    """Worker processes for ``items`` pieces of work: never more than the pieces (a pool
    starts all its processes at once, so --workers 300 on one cell started 300)."""
    return max(1, min(workers, items))


INTERRUPTED_EXIT = 130  # as a shell reports a command stopped by Ctrl-C (SIGINT)
INTERRUPTED = "storebench: interrupted: no further cell starts; waiting for the ones under way"
NOTICE_SECONDS = 0.2  # how soon a pool run says it saw Ctrl-C while its cells are under way

Item = TypeVar("Item")
Result = TypeVar("Result")


def _leave_interrupts_to_the_command() -> None:
    """A pool worker's initializer: Ctrl-C reaches every process of the terminal's group, and
    each worker would print its own traceback; the command stops the pool instead (:func:`run_in_pool`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Pressed:
    """Whether Ctrl-C was pressed: a plain flag, as a signal handler may run between any two
    bytecodes of the main thread (an ``Event`` takes a lock the interrupted code may hold)."""

    def __init__(self) -> None:
        self.pressed = False

    def is_set(self) -> bool:
        return self.pressed

    def set(self) -> None:
        self.pressed = True


@contextmanager
def _ctrl_c_noted() -> Iterator[_Pressed]:
    """While the block runs, a first Ctrl-C sets the flag instead of raising KeyboardInterrupt
    wherever the command happens to be (between handing a cell to the pool and noting it, say,
    which would lose that cell's report); a second raises it, to stop at once.  Signals reach the
    main thread only: elsewhere, and where Ctrl-C is ignored (a command started in the
    background), the flag is never set and nothing is installed."""
    pressed = _Pressed()
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield pressed
        return

    def noted(_signum: int, _frame: object) -> None:
        if pressed.is_set():
            raise KeyboardInterrupt
        pressed.set()

    previous = signal.signal(signal.SIGINT, noted)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)


AGAIN = ("storebench: interrupted again: the cells under way are stopped, not waited for (their trials are not "
         "written; a hidden .<name>.partial-<pid> folder may be left where one was being written: remove it)")


def run_in_pool(work: Callable[[Item], Result], items: Iterable[Item], workers: int,
                done: Callable[[Item, Result], None]) -> None:
    """Run ``work`` on every item in ``workers`` processes, calling ``done(item, result)`` in this
    process as each finishes (in the order they finish).

    The pool never holds more than ``workers`` items: the next is handed over only when one
    finishes.  (A ``ProcessPoolExecutor`` given every item at once moves ``workers + 1`` of them
    ahead into its call queue, where ``shutdown(cancel_futures=True)`` cannot reach them, so a
    cell started after Ctrl-C.)  On Ctrl-C, or when ``done`` raises KeyboardInterrupt, no further
    item is handed over; the ones under way finish (a trial folder is written whole or not at
    all) and each is passed to ``done`` like any other; then KeyboardInterrupt goes on to the
    command and to :func:`main`, which says so and exits 130.  A second Ctrl-C stops the workers
    at once (a trial under way is not written: its folder is renamed into place only when whole)."""
    waiting = iter(items)
    running: dict[Future[Result], Item] = {}
    told = False
    with _ctrl_c_noted() as pressed, \
            ProcessPoolExecutor(max_workers=workers, initializer=_leave_interrupts_to_the_command) as pool:
        try:
            while True:
                if not pressed.is_set():
                    for item in islice(waiting, workers - len(running)):
                        running[pool.submit(work, item)] = item
                elif not told:
                    told = True
                    print(INTERRUPTED, file=sys.stderr, flush=True)
                if not running:
                    break
                finished, _ = wait(running, timeout=NOTICE_SECONDS, return_when=FIRST_COMPLETED)
                for future in finished:
                    item = running.pop(future)
                    try:
                        done(item, future.result())
                    except KeyboardInterrupt:
                        if pressed.is_set():  # Ctrl-C again, while this cell was reported
                            raise
                        pressed.set()
        except KeyboardInterrupt:  # pressed again
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # a third press must not cut the stopping short
            print(AGAIN, file=sys.stderr, flush=True)
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    if pressed.is_set():
        raise KeyboardInterrupt


def path_arg(text: str) -> str:
    """argparse type: a path that names something (an empty one was read as the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names nothing: give the folder or file")
    return text


def seconds_above_zero(example: float) -> Callable[[str], float]:
    """argparse type: a finite number of seconds above zero; a refusal suggests ``example`` (the option's
    default, say), so that the value it offers makes sense for the option."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"{text} is not a time: give a number of seconds above zero, "
                                             f"e.g. {example:g}")
        return value

    return parse


positive_seconds = seconds_above_zero(3600)  # a job's wait: an hour


def _why(exc: OSError, folder: Path | None) -> str:
    """The system's reason, except that a pseudo file system (/proc, /sys) answers "No such
    file or directory" for a new entry in a folder it shows."""
    if exc.errno == errno.ENOENT and folder is not None and folder.is_dir():
        return f"{folder} takes no new files"
    return exc.strerror or str(exc)


def writable_folder(path: str | Path, flag: str) -> Path:
    """``path`` as a folder to write into, created if need be, before any work starts;
    :class:`StoreBenchError` naming ``flag`` when it is a file, cannot be created, or refuses
    a new folder with a file in it (probed: created and removed at once), so a long run never
    ends in a write that fails."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise StoreBenchError(f"{flag}: {folder} is a file, not a folder; name a folder (it is created if need be)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        existing = next((p for p in folder.parents if p.is_dir()), None)
        raise StoreBenchError(f"{flag}: cannot create the folder {folder} ({_why(exc, existing)}); name a folder "
                              "you can write to") from None
    probe: Path | None = None
    try:
        probe = Path(tempfile.mkdtemp(prefix=".storebench-write-check-", dir=folder))
        (probe / "check").write_bytes(b"")
    except OSError as exc:
        raise StoreBenchError(f"{flag}: cannot write in the folder {folder} ({_why(exc, folder)}); name a folder you "
                              "can write to") from None
    finally:
        if probe is not None:
            shutil.rmtree(probe, ignore_errors=True)
    return folder


def writable_file(path: str | Path, flag: str, example: str) -> Path:
    """``path`` as a file to write at the end of a long run, checked before it starts: not a
    folder (the message suggests ``example`` inside it), and its folder exists or can be created."""
    file = Path(path)
    if file.is_dir():
        raise StoreBenchError(f"{flag} {file} is a folder; name the file to write, e.g. {file / example}")
    writable_folder(file.parent, flag)
    return file


# --- world ------------------------------------------------------------------------


def _cmd_world_stats(args: argparse.Namespace) -> int:
    from .world import load_world
    from .world.stats import world_stats

    stats = world_stats(load_world(args.world))
    if args.json:
        _print_json(stats)
    else:
        width = max(len(k) for k in stats)
        for key, value in stats.items():
            print(f"{key:<{width}}  {value}")
    return 0


def _cmd_world_audit(args: argparse.Namespace) -> int:
    from .world import load_world
    from .world.audits import run_audits

    results = run_audits(load_world(args.world))
    passed = sum(r.passed for r in results)
    if args.json:
        _print_json({"passed": passed, "total": len(results), "audits": [r.as_dict() for r in results]})
    else:
        for r in results:
            print(f"{'PASS' if r.passed else 'FAIL'}  {r.name}: {r.detail}")
        print(f"{passed} of {len(results)} audits passed")
    return 0 if passed == len(results) else 1


def _cmd_world_hash(args: argparse.Namespace) -> int:
    from .world.codec import content_hash
    from .world.generate import generate
    from .world.loader import RECORDED_HASH_FILE, recorded_hash

    started = time.perf_counter()
    world = generate()
    seconds = time.perf_counter() - started
    actual = content_hash(world)
    if args.record:
        RECORDED_HASH_FILE.write_text(actual + "\n")
        print(f"recorded {actual} in {RECORDED_HASH_FILE}")
        return 0
    try:
        recorded = recorded_hash()
    except StoreBenchError:
        recorded = None
    result = {"generated": actual, "recorded": recorded, "matches": actual == recorded,
              "generate_seconds": round(seconds, 3)}
    if args.json:
        _print_json(result)
    else:
        print(f"generated {actual} in {seconds:.2f} s; recorded {recorded}; "
              f"{'match' if actual == recorded else 'MISMATCH'}")
    return 0 if actual == recorded else 1


def _cmd_world_export(args: argparse.Namespace) -> int:
    from .world import load_world
    from .world.loader import export_world

    path = Path(args.path)
    if not path.is_dir() and not path.name.endswith((".json", ".json.gz")):  # checked before any folder is made
        raise StoreBenchError(f"the export path {path} names neither a .json nor a .json.gz file: the name says "
                              f"how the world is written (plain or gzipped JSON), e.g. {path.with_suffix('.json.gz')}")
    path = writable_file(path, "the export path", "world.json.gz")
    export_world(load_world(), path)
    print(f"wrote the world to {args.path}")
    return 0


# --- tasks, runs, calibration, grading ------------------------------------------------


def _ablate_one(task_id: str, seed: int) -> dict[str, Any]:
    from .ablation import ablate
    from .tasks import get_task
    from .world import load_world

    return ablate(get_task(task_id), seed, load_world())


ABLATE_WORKERS = 2  # tasks ablate all's worker processes; --workers is None unless given (refused for one lens)


def _cmd_tasks_ablate(args: argparse.Namespace) -> int:
    from .ablation import document, render
    from .tasks import all_tasks

    if args.task != "all":
        if args.out:
            raise StoreBenchError("--out writes the report's ablation table and goes with `all`; for one lens, "
                                  "redirect the printed table (or use --json)")
        if args.workers is not None:
            raise StoreBenchError("--workers runs lenses in parallel and goes with `all`; one lens is ablated in "
                                  "one process: leave --workers out")
        result = _ablate_one(args.task, args.seed)
        if args.json:
            _print_json(result)
        else:
            print(render(result))
        return 0
    if args.out:
        writable_file(args.out, "--out", "ablation.md")
    ids = [t.id for t in all_tasks()]
    results: dict[str, dict[str, Any]] = {}

    def ablated(task_id: str, result: dict[str, Any]) -> None:
        results[task_id] = result
        print(f"[{len(results)}/{len(ids)}] {task_id} ablated", file=sys.stderr, flush=True)

    run_in_pool(partial(_ablate_one, seed=args.seed), ids, pool_size(args.workers or ABLATE_WORKERS, len(ids)),
                ablated)
    ordered = [results[task_id] for task_id in ids]
    if args.json:
        _print_json(ordered)
    elif args.out:
        Path(args.out).write_text(document(ordered))
        print(f"wrote {args.out} (a calibration report written beside it includes it)")
    else:
        print(document(ordered), end="")
    return 0


def _cmd_tasks_list(args: argparse.Namespace) -> int:
    from .tasks import PUBLIC_SEEDS, all_tasks, held_out_seeds

    rows = [{"id": t.id, "split": t.split, "title": t.title, "days": t.horizon_days, "windows": t.windows,
             "window_hours": t.window_hours, "ops_per_window": t.ops_per_window, "events": len(t.events),
             "competition": bool(t.competitors), "file_hash": t.file_hash}
            for t in all_tasks(args.split)]
    if args.json:
        _print_json({"public_seeds": list(PUBLIC_SEEDS), "held_out_seeds": len(held_out_seeds()), "tasks": rows})
    else:
        print(f"{'TASK':<16} {'SPLIT':<5} {'LENGTH':>8} {'WINDOWS':>7} {'OPS/WINDOW':>10} {'EVENTS':>6}  "
              f"{'RIVALS':<6}  TITLE")
        for r in rows:
            print(f"{r['id']:<16} {r['split']:<5} {r['days']:>3} days {r['windows']:>7} {r['ops_per_window']:>10} "
                  f"{r['events']:>6}  {'yes' if r['competition'] else '':<6}  {r['title']}")
    return 0


def _cmd_tasks_show(args: argparse.Namespace) -> int:
    from .brief import brief
    from .tasks import get_task

    task = get_task(args.task)
    if args.prompt:
        sys.stdout.write(brief(task))
        return 0
    row = {"id": task.id, "split": task.split, "title": task.title, "start": task.start,
           "days": task.horizon_days, "windows": task.windows, "window_hours": task.window_hours,
           "ops_per_window": task.ops_per_window, "listing_cap": task.listing_cap, "events": len(task.events),
           "competition": bool(task.competitors), "file_hash": task.file_hash, "source": task.source}
    if args.json:
        _print_json({**row, "brief": brief(task)})
    else:
        width = max(len(k) for k in row)
        for key, value in row.items():
            print(f"{key:<{width}}  {value}")
    return 0


def policy_names() -> str:
    """The policies ``--policy`` takes, for help texts: every anchor, then the calibration checks
    (:data:`environment.anchors.ANCHORS` and ``CHECKS``, the one list :func:`get_anchor` accepts)."""
    from .anchors import ANCHORS, CHECKS

    names = [*ANCHORS, *CHECKS]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _load_calibration_arg(path: str | None) -> tuple[dict[str, Any], str] | tuple[None, None]:
    from .calibration import load_calibration

    if path is None:
        return None, None
    return load_calibration(path)


def _cmd_run(args: argparse.Namespace) -> int:

    from .anchors import get_anchor
    from .artifacts import ArtifactError
    from .trial import run_trial

    get_anchor(args.policy)  # refuse an unknown policy before any work
    out_path = Path(args.out)
    if out_path.exists() and not out_path.is_dir():
        raise ArtifactError(f"--out {out_path} is a file; name a new or empty folder for the trial")
    if out_path.is_dir() and any(out_path.iterdir()):
        raise ArtifactError(f"--out {out_path} already holds files; choose an empty or new folder")
    calibration, cal_hash = _load_calibration_arg(args.calibration)
    writable_folder(out_path.parent, "--out")  # last: nothing is created for a run refused above
    data = run_trial(args.task, args.seed, args.out, policy=args.policy, calibration=calibration,
                     calibration_hash=cal_hash)
    if args.json:
        _print_json(data)
    else:
        print(f"{args.policy} on {args.task} seed {args.seed}: composite {data['reward_composite']:.3f} "
              f"(business {data['business']:.3f}, reliability {data['reliability']:.3f}, continuity "
              f"{data['continuity']:.3f}); threshold {data['threshold']:.3f} ({data['calibration']}); "
              f"{'pass' if data['pass'] else 'no pass'}; wrote {data['out']}")
    if data.get("gates_failed"):
        _say_gates_failed([f"{args.task} seed {args.seed}"], data["gates_failed"])
    return 0


def _say_gates_failed(cells: list[str], gates: list[str] | None = None) -> None:
    """On stderr: ``cells`` were calibrated on the spot and fail the calibration's gates (see
    :data:`~environment.calibration.GATES_NOTE`), naming the gates when one cell is meant."""
    from .calibration import GATES_NOTE
    from .orchestration import some_of

    named = some_of(cells, 5)
    which = f"{named}: " if len(cells) == 1 else f"{len(cells)} cells ({named}): "
    said = f" (gates failed: {'; '.join(gates)})" if gates else ""
    print(f"storebench: {which}{GATES_NOTE}{said}", file=sys.stderr, flush=True)


def _batch_one(job: tuple[Any, ...]) -> dict[str, Any]:
    from .trial import read_actions, run_trial

    task, seed, out, policy, actions_path, calibration, cal_hash = job
    actions = read_actions(actions_path) if actions_path else None
    try:
        return run_trial(task, seed, out, policy=policy, actions=actions, calibration=calibration,
                         calibration_hash=cal_hash)
    except StoreBenchError as exc:  # one cell's refusal (its folder cannot be written) spares the others
        return {"task": task, "seed": seed, "out": out, "error": exc.message}


def _cmd_batch(args: argparse.Namespace) -> int:
    from .api import cell_constants
    from .calibration import cell_of
    from .orchestration import batch_summary, plan_batch, played_trial, some_of

    # Everything is checked before anything is created: a refused batch leaves no --out behind.
    cells = plan_batch(args.tasks, args.seeds, args.out, policy=args.policy, actions=args.actions,
                       skip_played=args.skip_played, other_way=", or --skip-played to play only the cells not played yet")
    played = {c.out: score for c in cells if (score := played_trial(c)) is not None} if args.skip_played else {}
    calibration, cal_hash = _load_calibration_arg(args.calibration)
    writable_folder(args.out, "--out")
    to_play = [c for c in cells if c.out not in played]
    if calibration is None:
        named = some_of([f"{c.task} seed {c.seed}" for c in cells], 5)
        which = f"the cell {named} is" if len(cells) == 1 else f"each of the {len(cells)} cells ({named}) is"
        print(f"storebench: no --calibration, so {which} calibrated on the spot", file=sys.stderr)
    else:
        missing = [f"{c.task} seed {c.seed}" for c in cells if cell_of(calibration, c.task, c.seed) is None]
        if missing:
            print(f"storebench: not in {args.calibration}, so calibrated on the spot: {some_of(missing, 5)}",
                  file=sys.stderr)
    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for i, c in enumerate(c for c in cells if c.out in played):
        threshold = cell_constants(c.task, c.seed, calibration)[0]["threshold"]
        composite = float(played[c.out]["reward_composite"])
        results.append({**played[c.out], "out": str(c.out), "pass": composite >= threshold, "threshold": threshold,
                        "skipped": True})
        print(f"[{i + 1}/{len(cells)}] {c.out}: already played, composite {composite:.3f}"
              f"{' pass' if composite >= threshold else ''}", file=sys.stderr, flush=True)
    jobs = [(c.task, c.seed, str(c.out), args.policy, args.actions, calibration, cal_hash) for c in to_play]
    place = {job[2]: i for i, job in enumerate(jobs)}
    finished: list[tuple[int, dict[str, Any]]] = []  # each cell played now, by its place in the run

    def report(job: tuple[Any, ...], data: dict[str, Any]) -> None:
        finished.append((place[job[2]], data))
        i = len(played) + len(finished)
        if "error" in data:
            print(f"[{i}/{len(cells)}] {data['out']}: FAILED: {data['error']}", file=sys.stderr, flush=True)
        else:
            print(f"[{i}/{len(cells)}] {data['out']}: composite {data['reward_composite']:.3f}"
                  f"{' pass' if data['pass'] else ''}{' (its cell fails the gates)' if data.get('gates_failed') else ''}",
                  file=sys.stderr, flush=True)

    try:
        run_in_pool(_batch_one, jobs, pool_size(args.workers, max(1, len(jobs))), report)
    except KeyboardInterrupt:
        print(f"storebench: the batch was interrupted; the trials written under {args.out} are whole: run the same "
              "command with --skip-played to play the rest", file=sys.stderr, flush=True)
        raise
    for _place, data in sorted(finished, key=lambda placed: placed[0]):  # the summary lists them in the run's order
        (failed if "error" in data else results).append(data)
    ungated = [f"{r['task']} seed {r['seed']}" for r in results if r.get("gates_failed")]
    if ungated:
        _say_gates_failed(ungated)
    wall = time.perf_counter() - started
    counts = batch_summary(results)
    summary = {"trials": counts["trials"], "passed": counts["passed"], "wall_seconds": round(wall, 2),
               "mean_composite": counts["mean_composite"], "skipped": len(played)}
    if args.json:
        _print_json({**summary, "results": results, "failed": failed})
    else:
        trials = f"{summary['trials']} trial" + ("" if summary["trials"] == 1 else "s")
        # From the composites, not the summary's mean (rounded to 4 places): rounding twice turned a
        # lone 0.13246 into 0.1325 and then "0.133".
        mean = "no mean composite" if not results else \
            f"mean composite {sum(r['reward_composite'] for r in results) / len(results):.3f}"
        print(f"{trials}, {summary['passed']} passed, {mean}, in {wall:.1f} s; trial folders under {args.out}"
              + (f" ({len(played)} played before, not again)" if played else "")
              + (f"; {len(failed)} failed (see above)" if failed else ""))
    return 1 if failed else 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from .artifacts import refuse_folders_given_wrongly
    from .replay import replay

    refuse_folders_given_wrongly(args.dirs)
    results = [replay(folder) for folder in args.dirs]
    if args.json:
        _print_json({"all_match": all(r.matches for r in results), "trials": [r.as_json() for r in results]})
    else:
        for r in results:
            print(f"{r.path}: {'replays exactly' if r.matches else 'DOES NOT REPLAY'} ({r.calls} calls)")
            for p in r.problems:
                print(f"    {p}")
            for note in r.notes:
                print(f"    note: {note}")
    return 0 if all(r.matches for r in results) else 1


def _cmd_analyze(args: argparse.Namespace) -> int:
    from .analyze import analyze
    from .artifacts import folder_checksum_problems, read_json_object
    from .replay import played_elsewhere

    reports: list[dict[str, Any]] = []
    for folder in args.dirs:
        try:
            report = analyze(folder)
        except StoreBenchError as exc:
            if len(args.dirs) == 1:
                raise
            print(f"storebench: {exc.message}", file=sys.stderr)  # the other folders are still reported
            reports.append({"path": str(folder), "error": exc.message})
            continue
        changed = folder_checksum_problems(folder)
        if changed:
            print(f"storebench: warning: {folder} does not match its manifest ({'; '.join(changed)}); the report "
                  "reads its files as they are now", file=sys.stderr)
        elsewhere = played_elsewhere(read_json_object(Path(folder) / "manifest.json"))  # analyze() has read it
        if elsewhere:
            print(f"storebench: warning: {folder}: {elsewhere}; the report replays its action log on this engine's, "
                  "so it may describe another store than the one played (storebench replay refuses it)",
                  file=sys.stderr)
        reports.append(report)
    if args.json:
        _print_json(reports if len(reports) > 1 else reports[0])
    elif len(reports) == 1:
        for key, value in reports[0].items():
            print(f"{key.replace('_', ' ')}: {_readable(value)}")
    else:
        for n, report in enumerate(reports):
            print(("\n" if n else "") + report["path"])
            if "error" in report:
                print(f"  cannot be analysed: {report['error']}")
            for key, value in report.items():
                if key not in ("path", "error"):
                    print(f"  {key.replace('_', ' ')}: {_readable(value)}")
    return 2 if any("error" in r for r in reports) else 0


def _readable(value: object) -> str:
    """A figure of the failure-mode report as a line of text: a mode as its count and a few
    examples, an example call as its fields."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict) and set(value) == {"count", "examples"}:
        examples = value["examples"]
        shown = "; ".join(_readable(e) for e in examples)
        return f"{value['count']}" + (f" (e.g. {shown})" if examples else "")
    if isinstance(value, dict):
        return ", ".join(f"{k} {_readable(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_readable(v) for v in value)
    return str(value)


def _calibrate_one(cell: tuple[str, int]) -> tuple[str, int, dict[str, Any], float]:
    from .orchestration import calibration_cell

    started = time.perf_counter()
    task_id, seed = cell
    return task_id, seed, calibration_cell(task_id, seed), time.perf_counter() - started


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .orchestration import check_replacing, expand_tasks, finish_calibration, run_cells

    task_ids = expand_tasks(args.tasks)
    cells = run_cells(task_ids, args.seeds)
    writable_file(args.out, "--out", "public.json")  # before the work, so a bad path never costs a whole calibration
    check_replacing(args.out, cells, replace=args.replace)
    started = time.perf_counter()
    results: dict[str, dict[int, dict[str, Any]]] = {}
    done = 0

    def record(item: tuple[str, int, dict[str, Any], float]) -> None:
        nonlocal done
        task_id, seed, cell, seconds = item
        done += 1
        results.setdefault(task_id, {})[seed] = cell
        print(f"[{done}/{len(cells)}] {task_id} seed {seed}: threshold {cell['threshold']:.2f}, oracle "
              f"{cell['oracle']} ({seconds:.1f} s)", file=sys.stderr, flush=True)

    workers = pool_size(args.workers, len(cells))
    try:
        if workers > 1:
            run_in_pool(_calibrate_one, cells, workers, lambda _cell, item: record(item))
        else:
            for cell in cells:
                record(_calibrate_one(cell))
    except KeyboardInterrupt:
        print(f"storebench: the calibration was interrupted with {done} of {len(cells)} cells finished, and nothing "
              f"was written (a calibration is written whole, after its last cell): run the same command again to "
              "calibrate", file=sys.stderr, flush=True)
        raise
    written = finish_calibration(results, task_ids, args.out)
    wall = time.perf_counter() - started
    print(written.report.read_text())
    if written.failures:
        for failure in written.failures:
            print(f"GATE FAILURE: {failure}", file=sys.stderr)
        kept = "left as it was" if Path(args.out).exists() else "not written"
        print(f"storebench: {len(written.failures)} gate failure(s), so {args.out} was {kept}; the failed "
              f"calibration is in {written.path} ({written.digest}) with its report {written.report}, for "
              "inspection", file=sys.stderr)
        return 1
    replaced = ""
    if written.replaced == written.digest:
        replaced = f"; it replaced the previous {args.out}, which was identical ({written.replaced})"
    elif written.replaced is not None:
        replaced = f"; it replaced the previous {args.out} ({written.replaced})"
    fewer = f" (one per cell: --workers {args.workers} asked for more)" if workers < args.workers else ""
    print(f"wrote {args.out} ({written.digest}) and {written.report} in {wall:.1f} s with {workers} worker(s)"
          + fewer + replaced)
    return 0


def _cmd_regrade(args: argparse.Namespace) -> int:
    from .artifacts import refuse_folders_given_wrongly
    from .calibration import load_calibration
    from .grading import regrade

    refuse_folders_given_wrongly(args.dirs)
    calibration, digest = load_calibration(args.calibration, required=True)
    results = [regrade(folder, calibration, digest) for folder in args.dirs]
    if args.json:
        _print_json({"all_reproduce": all(r.reproduces for r in results), "trials": [r.as_json() for r in results]})
    else:
        for r in results:
            if r.composite is None or r.task is None or r.seed is None:  # not even its cell could be read
                print(f"{r.path}: cannot be graded - DOES NOT REPRODUCE")
            elif r.refused:
                print(f"{r.path}: {r.task} seed {r.seed}: refused, so it grades to zero - DOES NOT REPRODUCE")
            else:
                head = (f"{r.path}: {r.task} seed {r.seed}: composite {r.composite} business {r.business} "
                        f"reliability {r.reliability} {'pass' if r.passed else 'no pass'}")
                print(head + (" - reproduces" if r.reproduces else " - DOES NOT REPRODUCE"))
            for p in r.problems:
                print(f"    {p}")
    return 0 if all(r.reproduces for r in results) else 1


def _cmd_search(args: argparse.Namespace) -> int:
    from .api import cell_constants
    from .search import search
    from .tasks import get_task

    calibration, _digest = _load_calibration_arg(args.calibration)
    task = get_task(args.task)
    cell, source = cell_constants(task, args.seed, calibration)

    def progress(done: int, best: float) -> None:
        if done == 1 or done % max(1, args.episodes // 10) == 0 or done == args.episodes:
            print(f"[{done}/{args.episodes}] {args.method} best composite so far {best:.3f}", file=sys.stderr,
                  flush=True)

    result = search(args.method, task.id, args.seed, cell, args.episodes, progress=progress)
    out = {**result.as_json(), "task": task.id, "seed": args.seed, "threshold": cell["threshold"],
           "calibration": source}
    if args.json:
        _print_json(out)
    else:
        print(f"{args.method} search, {args.episodes} episodes on {task.id} seed {args.seed}: best composite "
              f"{result.best:.3f} (business {result.best_business:.3f}, reliability {result.best_reliability:.3f}); "
              f"threshold {cell['threshold']:.3f} ({source}); "
              f"{'reaches' if result.best >= cell['threshold'] else 'stays below'} the threshold")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import bench_all, bench_engine

    if args.engine_only:
        figures = bench_engine(repeats=args.repeats)
    else:
        figures = bench_all(args.repeats, quick=args.quick, calibration=args.calibration,
                            progress=lambda msg: print(f"bench: {msg}", file=sys.stderr, flush=True))
    if args.json:
        _print_json(figures)
    else:
        for key, value in figures.items():
            if key == "targets":
                for t in value:
                    mark = {True: "MET", False: "NOT MET", None: "n/a"}[t["met"]]
                    print(f"target [{mark}] {t['target']}: {t['measured']}" + (f" ({t['note']})" if "note" in t
                                                                                 else ""))
            else:
                print(f"{key}: {value}")
    return 0


# --- parser ------------------------------------------------------------------------


CORE_ONLY = ("The core's commands only (pure Python, no MCP): the installed `storebench` command has these "
             "and also mcp and agent.")


class _Version(argparse.Action):
    """``--version``: the package's version, the suite id (worked out only when asked: the suite's
    digest reads the task files and the world) and the folder the core was imported from, so that
    someone with two clones sharing one virtual environment sees which one runs."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from . import __version__
        from .suite import suite_id

        print(f"storebench {__version__} (suite {suite_id()}) from {Path(__file__).resolve().parent}")
        parser.exit()


class _CommandParser(argparse.ArgumentParser):
    """A parser that refuses an argument it does not know itself, with its own usage.

    argparse hands a subcommand's unknown arguments up to the top parser, which refused
    ``storebench run --bogus`` with the usage of ``storebench`` (``COMMAND ...``) instead of
    ``run``'s.  Subparsers are made of their parent's class, so every subcommand, nested
    (``world stats``) or added above the core (``mcp``, ``agent``), reports its own.
    """

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]  # one signature, not overloads
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed, unknown


class _ExamplesFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that an epilog of examples keeps its lines as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES_HEADING):
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


EXAMPLES_HEADING = "Examples:"


def with_examples(parser: argparse.ArgumentParser, *lines: str) -> None:
    """End ``parser``'s --help with example command lines, one a line, as written."""
    parser.epilog = "\n".join((EXAMPLES_HEADING, *(f"  {line}" for line in lines)))
    parser.formatter_class = _ExamplesFormatter


def build_parser(extend: Callable[[Any], None] | None = None, prog: str = "storebench") -> argparse.ArgumentParser:
    """The ``storebench`` parser; ``extend(subparsers)`` adds the commands that live above the
    core (``mcp``, ``agent``: :mod:`mcp_client.cli`, the console entry point).  Under another
    ``prog`` (``python -m environment``) its description says it has the core's commands only."""
    description = "StoreBench: run, grade and inspect the Ostrelle live-commerce environment."
    parser = _CommandParser(
        prog=prog,
        description=description if prog == "storebench" else f"{description} {CORE_ONLY}",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the version and the suite (the tasks, world and calibration it grades with)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    world = sub.add_parser("world", help="inspect the fixed Ostrelle world",
                           description="The world every task shares: catalog, supplier market, "
                                       "customers and 18 months of history.")
    wsub = world.add_subparsers(dest="world_command", metavar="WORLD_COMMAND", required=True)

    stats = wsub.add_parser("stats", help="headline counts and rates, and the world hash",
                            description="Print the world's headline figures: catalog, vendors, customers and "
                                        "history counts, the return rate, the opening stock, orders, returns, "
                                        "purchase orders and receivables of the shift's start, and the world "
                                        "hash. The world is generated (the same every time), or read from an "
                                        "export with --world FILE.")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.add_argument("--world", metavar="FILE", help="a world export to read instead of generating")
    stats.set_defaults(func=_cmd_world_stats)
    with_examples(stats, "storebench world stats", "storebench world stats --world world.json.gz --json")

    aud = wsub.add_parser("audit", help="run the seed-quality audits (exit 1 if any fails)",
                          description="Run the seed-quality audits, the distributional and coherence checks "
                                      "that gate the world (categories and seasons covered, the listing cap, "
                                      "vendor terms, ...): one PASS or FAIL line each, saying what it measured, "
                                      "then the count passed. Exits 1 if any fails. The world is generated, or "
                                      "read from an export with --world FILE.")
    aud.add_argument("--json", action="store_true", help="print JSON")
    aud.add_argument("--world", metavar="FILE", help="a world export to read instead of generating")
    aud.set_defaults(func=_cmd_world_audit)
    with_examples(aud, "storebench world audit", "storebench world audit --json > audits.json")

    hsh = wsub.add_parser("hash", help="generate the world and compare its hash with the recorded one",
                          description="Generate the world afresh, time it, and compare its content hash with "
                                      "the one recorded in environment/world/world.sha256: exits 1 on a "
                                      "mismatch (the generator's output changed). After reviewing a deliberate "
                                      "generator change, --record writes the new hash as the recorded one.")
    hsh.add_argument("--json", action="store_true", help="print JSON")
    hsh.add_argument("--record", action="store_true",
                     help="write the generated hash as the recorded one (after reviewing a generator change)")
    hsh.set_defaults(func=_cmd_world_hash)
    with_examples(hsh, "storebench world hash", "storebench world hash --record   # after reviewing a generator change")

    exp = wsub.add_parser("export", help="write the world as canonical JSON (.json or .json.gz)",
                          description="Write the generated world as canonical JSON: plain for a name ending in "
                                      ".json, gzipped for .json.gz. The same world always writes the same bytes; "
                                      "`storebench world stats --world FILE` and `world audit --world FILE` read "
                                      "the file back.")
    exp.add_argument("path", help="output file, ending in .json or .json.gz")
    exp.set_defaults(func=_cmd_world_export)
    with_examples(exp, "storebench world export world.json.gz", "storebench world stats --world world.json.gz")

    tasks = sub.add_parser("tasks", help="the task suite", description="Tasks bundled with the environment.")
    tsub = tasks.add_subparsers(dest="tasks_command", metavar="TASKS_COMMAND", required=True)
    tlist = tsub.add_parser("list", help="list the training tasks and evaluation lenses",
                            description="List the bundled tasks with their split, length in windows, operations "
                                        "per window and title. `storebench tasks show TASK` gives one task's "
                                        "terms; --tasks eval, train or all names these groups in batch, "
                                        "calibrate and agent.")
    tlist.add_argument("--json", action="store_true", help="print JSON")
    tlist.add_argument("--split", choices=("train", "eval", "practice"),
                       help="only this split (without it: train and eval; practice is the console's practice task)")
    tlist.set_defaults(func=_cmd_tasks_list)
    with_examples(tlist, "storebench tasks list", "storebench tasks list --split eval --json")
    tshow = tsub.add_parser("show", help="one task's public terms, or with --prompt the brief an agent is given",
                            description="Show a task's public terms. With --prompt, print exactly the brief an "
                                        "agent receives (the MCP server's instructions, prompt 'brief' and "
                                        "resource storebench://brief): the task's prompt and the shared terms, "
                                        "never its id, seed or event script.")
    tshow.add_argument("task", help="task id (see `storebench tasks list`)")
    tshow.add_argument("--prompt", action="store_true", help="print only the agent's brief")
    tshow.add_argument("--json", action="store_true", help="print JSON (the terms and the brief)")
    tshow.set_defaults(func=_cmd_tasks_show)
    with_examples(tshow, "storebench tasks show liquidity", "storebench tasks show steady --prompt")
    tabl = tsub.add_parser("ablate", help="remove each ingredient of a lens and show how the anchors change",
                           description="Ablate a lens: for each defining ingredient (an event, the rivals, the "
                                       "cash or terms overrides, a trimmed or empty shelf) replay blast-list, "
                                       "rule-based and smart-triage without it, graded with the lens's own "
                                       "zero and scale. An ingredient bites when removing it moves an anchor's "
                                       "composite by at least 0.02. It also replays rule-based and smart-triage "
                                       "without their purchase orders: restocking pays on the lens when the "
                                       "better of them loses 0.02 or more that way.")
    tabl.add_argument("task", help="task id (see: storebench tasks list), or all for every eval and train task")
    tabl.add_argument("--seed", type=seed_arg, default=7, help="seed (default 7)")
    tabl.add_argument("--out", metavar="FILE", type=path_arg, help="with all: write the report's ablation table "
                                                   "(e.g. calibration/ablation.md) instead of printing it")
    tabl.add_argument("--workers", type=positive_int,
                      help=f"with all: parallel worker processes (default {ABLATE_WORKERS})")
    tabl.add_argument("--json", action="store_true", help="print JSON")
    tabl.set_defaults(func=_cmd_tasks_ablate)
    with_examples(tabl, "storebench tasks ablate liquidity", "storebench tasks ablate all --out calibration/ablation.md")

    run = sub.add_parser("run", help="run a scripted policy on one task and seed and write its trial folder",
                         description="Run a scripted policy (one of the six anchors, or the diligence-only "
                                     "clerk the calibration plays as a check) through the tool surface, grade it and "
                                     "write the trial's artifacts (score.json, actions, ledger, per-window "
                                     "balances).")
    run.add_argument("--task", required=True, help="task id (see `storebench tasks list`)")
    run.add_argument("--seed", required=True, type=seed_arg, help="task seed, e.g. 7, 11 or 13")
    run.add_argument("--policy", required=True, help=policy_names())
    run.add_argument("--out", required=True, type=path_arg, help="trial folder to create (must be empty or new; its folder "
                                                  "must be writable, checked before the trial is played)")
    run.add_argument("--calibration", metavar="FILE", type=path_arg,
                     help="calibration file for the business zero and scale; without it the cell is calibrated "
                          "on the spot")
    run.add_argument("--json", action="store_true", help="print the score as JSON")
    run.set_defaults(func=_cmd_run)
    with_examples(run, "storebench run --task steady --seed 7 --policy smart-triage --out trials/st-steady-7 \\",
                  "    --calibration calibration/public.json",
                  "storebench run --task liquidity --seed 11 --policy diligence --out trials/clerk --json")

    batch = sub.add_parser("batch", help="play a policy or a recorded action log on many cells in parallel",
                           description="Play a scripted policy, or replay a recorded action log, on every "
                                       "task-seed cell given (each task and seed once), one worker process "
                                       "per cell, writing one trial folder each under OUT (OUT/TASK-SEED-LABEL). "
                                       "Progress goes to stderr; the summary (trials, passes, mean composite) to "
                                       "stdout, as text or with --json as JSON. Exits 1 if a trial could not be "
                                       "written.")
    batch.add_argument("--tasks", nargs="+", default=["all"], help=f"{TASKS_HELP} (default all)")
    batch.add_argument("--seeds", nargs="+", type=seed_arg, default=[7, 11, 13], help="seeds (default 7 11 13)")
    batch.add_argument("--policy", help=policy_names() + " (give this or --actions)")
    batch.add_argument("--actions", metavar="FILE", help="an actions.jsonl (at least one call) to replay on every "
                                                         "cell")
    batch.add_argument("--out", required=True, type=path_arg, help="folder to hold the trial folders (created once every "
                                                    "argument is checked)")
    batch.add_argument("--workers", type=positive_int, default=2, help="parallel worker processes (default 2)")
    batch.add_argument("--skip-played", action="store_true",
                       help="--out may hold trials of this batch already (an interrupted run): play only the cells "
                            "without one; the summary counts them all")
    batch.add_argument("--calibration", metavar="FILE", type=path_arg,
                       help="calibration file; a cell it lacks (or every cell, without it) is calibrated on the "
                            "spot, with a notice on stderr")
    batch.add_argument("--json", action="store_true",
                       help="print the summary and every trial's result as JSON (else one line of text)")
    batch.set_defaults(func=_cmd_batch)
    with_examples(batch, "storebench batch --tasks eval --policy smart-triage --out trials/batch \\",
                  "    --calibration calibration/public.json",
                  "storebench batch --tasks eval --policy smart-triage --out trials/batch --skip-played \\",
                  "    --calibration calibration/public.json   # finish an interrupted batch",
                  "storebench batch --tasks train --seeds 7 --actions trials/st-steady-7/actions.jsonl --out trials/again")

    rep = sub.add_parser("replay", help="re-execute trial folders and demand a byte-exact match",
                         description="Check every file of each trial against the checksums in its manifest.json, "
                                     "then replay its action log in a fresh engine and check the ledger, the "
                                     "per-window balances, the events, the score and every tool result byte for "
                                     "byte. Exits 0 only if all match.")
    rep.add_argument("dirs", nargs="+", type=path_arg, help="trial folders (for a batch's output, DIR/*)")
    rep.add_argument("--json", action="store_true", help="print JSON")
    rep.set_defaults(func=_cmd_replay)
    with_examples(rep, "storebench replay trials/st-steady-7", "storebench replay trials/batch/*   # every trial of a batch")

    ana = sub.add_parser("analyze", help="failure-mode report of trial folders (no model in the loop)",
                         description="Replay a trial and report: never restocked, restocked only after running "
                                     "out, partial refunds that escalated, windows skipped or ended early, quit "
                                     "before the horizon, writes on stale reads. Several folders are reported one "
                                     "after another under their paths. A folder whose files do not match its "
                                     "manifest gets a warning on stderr (the report reads the files as they are), "
                                     "and so does one played on another world or task file than this engine's.")
    ana.add_argument("dirs", nargs="+", type=path_arg, help="trial folders (for a batch's output, DIR/*)")
    ana.add_argument("--json", action="store_true",
                     help="print JSON: one folder's report as an object, several as a list; each names its path")
    ana.set_defaults(func=_cmd_analyze)
    with_examples(ana, "storebench analyze trials/st-steady-7", "storebench analyze trials/batch/* --json > report.json")

    cal = sub.add_parser("calibrate", help="run the anchors on task-seed cells, check the gates, write the file",
                         description="Calibrate cells: the six anchors set each cell's zero, scale and pass "
                                     "threshold, and a diligence-only clerk is played as a check; the five gates "
                                     "(ordering, judgment gap, flap margin, exploit suppression, diligence) must "
                                     "hold on every cell. Writes OUT (--out), OUT.sha256 and a report, "
                                     "STEM.report.md (a table) and STEM.ladder.svg (a chart), beside it (STEM is "
                                     "OUT without .json), replacing an earlier OUT (the old hash is printed) only "
                                     "when this run calibrates every cell it holds, or with --replace. If any gate "
                                     "fails it exits 1 naming the cell and the gate, and leaves OUT as it was: "
                                     "the failed calibration goes to STEM.failed.json beside it, with its report. "
                                     "Shows each cell as it is done. The 51 public cells take about a minute with "
                                     "--workers 2 on a two-core machine (the default is one worker).")
    cal.add_argument("--tasks", nargs="+", default=["all"], help=f"{TASKS_HELP} (default all)")
    cal.add_argument("--seeds", nargs="+", type=seed_arg, default=[7, 11, 13], help="seeds (default 7 11 13)")
    cal.add_argument("--out", required=True, type=path_arg, help="calibration JSON to write (only if every gate holds)")
    cal.add_argument("--replace", action="store_true",
                     help="replace --out even if it holds cells this run does not calibrate (they are dropped)")
    cal.add_argument("--workers", type=positive_int, default=1,
                     help="parallel worker processes, one cell each (default 1)")
    cal.set_defaults(func=_cmd_calibrate)
    with_examples(cal, "storebench calibrate --tasks steady --seeds 7 11 --out my.json",
                  "storebench calibrate --out my-calibration.json --workers 2   # every public cell")

    reg = sub.add_parser("regrade", help="recompute scores of trial folders from their ledgers",
                         description="Re-grade trials: recompute business, reliability, composite and pass from "
                                     "each score.json, its ledger and the calibration. Exits 0 only if every "
                                     "trial reproduces.")
    reg.add_argument("dirs", nargs="+", type=path_arg, help="trial folders (for a batch's output, DIR/*)")
    reg.add_argument("--calibration", required=True, type=path_arg, help="calibration file")
    reg.add_argument("--json", action="store_true", help="print JSON")
    reg.set_defaults(func=_cmd_regrade)
    with_examples(reg, "storebench regrade trials/batch/* --calibration calibration/public.json")

    srch = sub.add_parser("search", help="random search or hill climbing over action sequences",
                          description="Check that cheap search cannot game the composite: play N episodes of "
                                      "random or hill-climbed action sequences and report the best composite "
                                      "beside the cell's threshold (a line of text, or JSON with --json).")
    srch.add_argument("--method", choices=("random", "hill"), required=True,
                      help="random: independent random action sequences; hill: mutate the best one so far")
    srch.add_argument("--task", default="steady", help="task id (default steady)")
    srch.add_argument("--seed", type=seed_arg, default=7, help="task seed (default 7)")
    srch.add_argument("--episodes", type=positive_int, default=300,
                      help="episodes to play (default 300, the paper's; about two minutes on steady)")
    srch.add_argument("--calibration", metavar="FILE", type=path_arg, help="calibration file (else the cell is calibrated now)")
    srch.add_argument("--json", action="store_true", help="print JSON, with the best-so-far curve")
    srch.set_defaults(func=_cmd_search)
    with_examples(srch, "storebench search --method random --calibration calibration/public.json",
                  "storebench search --method hill --task steady --seed 7 --episodes 300 --json > hill.json")

    bench = sub.add_parser("bench", help="measure speed and memory (medians, printed, never asserted)",
                           description="Measure, in one run: in-process tool calls, window advances and whole "
                                       "episodes per anchor; the full calibration with 1 and 2 workers; memory per "
                                       "live episode; and each figure against the operations spec's targets. The "
                                       "MCP and console round trips need the adapters: `python -m benchmarks` "
                                       "runs these figures and adds them.")
    bench.add_argument("--json", action="store_true", help="print JSON")
    bench.add_argument("--repeats", type=positive_int, default=5, help="repetitions per figure (default 5)")
    bench.add_argument("--quick", action="store_true",
                       help="fewer repetitions and no calibration (about a minute instead of several)")
    bench.add_argument("--calibration", action=argparse.BooleanOptionalAction, default=True,
                       help="time the full calibration with 1 and 2 workers (default on; minutes)")
    bench.add_argument("--engine-only", action="store_true", help="only the in-process engine figures")
    bench.set_defaults(func=_cmd_bench)
    with_examples(bench, "storebench bench --quick", "storebench bench --engine-only --json")
    if extend is not None:
        extend(sub)
    return parser


def main(argv: Sequence[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    try:
        return cast(int, args.func(args))
    except StoreBenchError as exc:
        print(f"storebench: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("storebench: interrupted (Ctrl-C)", file=sys.stderr)
        return INTERRUPTED_EXIT


if __name__ == "__main__":
    sys.exit(main())
