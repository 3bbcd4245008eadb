"""Many episodes at once: a process-pool runner, and Gymnasium vector environments.

:func:`run_many` plays a list of cells with a scripted policy across worker
processes (:class:`concurrent.futures.ProcessPoolExecutor`).  Each worker loads the
world once, in its initializer, and keeps it for every episode it plays; an
episode is a pure function of (task, seed, policy), so the results are the same,
in the same order, whatever the number of workers.  ``workers=0`` plays in this
process, with no pool.

:func:`make_vector_env` builds ``StoreBench-v0`` as a Gymnasium vector env.  Text
spaces do batch (an observation batch is a tuple of strings).  ``SyncVectorEnv``
works as is.  ``AsyncVectorEnv`` must be built with ``shared_memory=False``: with
Gymnasium's default shared memory, Text observations are read out of the buffer
once at construction (a tuple of strings is a copy, not a view) and never again,
so every later observation comes back as the initial, all-padding buffer (checked on
Gymnasium 1.4.0; the same root cause as Gymnasium issue #1164 for Dict spaces).
:func:`make_vector_env` sets it.

:func:`bench_vector` measures episodes per second of the process-pool runner.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..anchors import run_policy
from ..calibration import cell_of
from ..engine import Episode
from ..engine.settlement import score
from ..errors import check_seed
from ..tasks import PUBLIC_SEEDS, get_task
from ..world import load_world
from .session import load_calibration_doc

if TYPE_CHECKING:
    from gymnasium.vector import VectorEnv

Policy = str | Callable[[Episode], object]


def _init_worker() -> None:
    load_world()  # once per worker process; every episode it plays reuses it


def play_cell(task: str, seed: int, policy: Policy, cell: dict[str, Any] | None = None) -> dict[str, Any]:
    """One episode of ``policy`` (an anchor's name, or a callable acting on the
    :class:`Episode` through ``ep.call`` only), settled, and scored with the calibration
    ``cell``'s constants when one is given."""
    ep = Episode(get_task(task), seed, load_world())
    if isinstance(policy, str):
        run_policy(ep, policy)
    else:
        policy(ep)
    if not ep.over:
        ep.stop()
    if cell is None:
        s = score(ep)
    else:
        s = score(ep, Decimal(str(cell["business_zero_raw"])), Decimal(str(cell["business_scale"])))
    return {
        "task": ep.task.id, "seed": ep.seed, "policy": policy if isinstance(policy, str) else _name(policy),
        "end_reason": ep.end_reason, "windows_played": ep.window, "operations_spent": ep.calls,
        "business_raw": float(s.business_raw), "dense_rewards_cents": ep.dense_rewards(),
        "score": s.as_json() if cell is not None else None,
    }


def _name(fn: Callable[[Episode], object]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _play(job: tuple[Any, ...]) -> dict[str, Any]:
    return play_cell(*job)


def run_many(cells: Iterable[tuple[str, int]], policy: Policy, workers: int = 2, *,
             calibration: str | Path | dict[str, Any] | None = "public") -> list[dict[str, Any]]:
    """Play every (task, seed) cell with ``policy``; results in the order of ``cells``.

    ``policy`` is an anchor's name (see :data:`environment.anchors.ANCHORS`) or a
    callable taking the :class:`Episode`; with ``workers > 0`` a callable must be
    picklable (a module-level function).  Scores use the cell's calibration constants
    when the calibration has the cell, else ``score`` is ``None`` (``business_raw`` is
    always there)."""
    doc = load_calibration_doc(calibration)
    jobs = []
    for task, seed in cells:
        task_id, seed = get_task(task).id, check_seed(seed)
        jobs.append((task_id, seed, policy, cell_of(doc, task_id, seed) if doc else None))
    if workers <= 0:
        load_world()
        return [_play(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker) as pool:
        return list(pool.map(_play, jobs, chunksize=max(1, len(jobs) // (4 * workers))))


def bench_vector(n_episodes: int = 12, workers: int = 1, *, task: str = "short-runway",
                 policy: str = "smart-triage", seeds: Sequence[int] = PUBLIC_SEEDS) -> float:
    """Episodes per second of :func:`run_many` (pool start-up and world loading included)."""
    cells = [(task, seeds[i % len(seeds)]) for i in range(n_episodes)]
    started = time.perf_counter()
    run_many(cells, policy, workers=workers)
    return n_episodes / (time.perf_counter() - started)


def make_vector_env(num_envs: int, vectorization_mode: str = "sync", **env_kwargs: Any) -> VectorEnv:
    """``StoreBench-v0`` as a Gymnasium vector env (``"sync"`` or ``"async"``)."""
    import gymnasium

    from . import ENV_ID

    vector_kwargs = {"shared_memory": False} if vectorization_mode == "async" else {}
    return gymnasium.make_vec(ENV_ID, num_envs=num_envs, vectorization_mode=vectorization_mode,
                              vector_kwargs=vector_kwargs, **env_kwargs)
