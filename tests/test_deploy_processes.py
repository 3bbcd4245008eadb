"""The deployment's process commands as an operator runs them: the ``make`` targets (read with
``make -n``, the real Makefile) and the ``Procfile``'s lines (run by ``sh -c``, as honcho and
foreman run them)."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PROCESS_TARGETS = {"console": "uvicorn config.asgi:application", "worker": "celery -A config worker",
                   "beat": "celery -A config beat", "mcp": "storebench mcp --http"}


def dry_run(folder: Path, target: str) -> str:
    done = subprocess.run(["make", "-n", target], cwd=folder, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def checkout(tmp_path) -> Path:
    """The Makefile and pyproject.toml with a virtual environment built before pyproject.toml changed."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".installed").touch()
    os.utime(tmp_path / ".venv" / ".installed", (1_600_000_000, 1_600_000_000))  # older than pyproject.toml
    return tmp_path


def test_only_the_release_step_updates_the_environment_after_an_upgrade(checkout):
    assert "pip install" in dry_run(checkout, "release")
    for target, command in PROCESS_TARGETS.items():
        planned = dry_run(checkout, target)
        assert command in planned and "pip install" not in planned, (target, planned)
    assert "--proxy-headers" in dry_run(checkout, "console")  # as the Procfile's web line
    for web in (dry_run(checkout, "console"), procfile_line("web")):  # a stop waits for connections 30 s at most
        assert "--timeout-graceful-shutdown 30" in web, web


def test_a_process_target_builds_a_missing_environment(checkout):
    shutil.rmtree(checkout / ".venv")
    assert "pip install" in dry_run(checkout, "console")


def procfile_line(name: str) -> str:
    for line in (REPO / "Procfile").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name} line in the Procfile")


def run_line(name: str, tmp_path: Path, **env: str) -> subprocess.Popen:
    clean = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")}
    clean.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", DJANGO_DEBUG="1", **env)
    return subprocess.Popen(["sh", "-c", procfile_line(name)], cwd=REPO, env=clean, start_new_session=True,
                            stdout=(tmp_path / f"{name}.log").open("wb"), stderr=subprocess.STDOUT)


def wait_until(process: subprocess.Popen, ready, what: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, f"the {what} exited: {log.read_text(errors='replace')[-2000:]}"
        assert time.monotonic() < deadline, f"the {what} did not get ready: {log.read_text(errors='replace')[-2000:]}"
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


@pytest.mark.slow
def test_the_procfile_beat_makes_the_folder_of_its_schedule_file(tmp_path):
    schedule = tmp_path / "deploy" / "beat" / "schedule"
    beat = run_line("beat", tmp_path, BEAT_SCHEDULE_FILE=str(schedule),
                    STOREBENCH_CELERY_QUEUE=f"procfile-beat-{os.getpid()}")
    try:
        wait_until(beat, lambda: any(schedule.parent.glob("schedule*")), "beat", tmp_path / "beat.log")
    finally:
        stop(beat)


@pytest.mark.slow
def test_the_procfile_mcp_line_serves_the_episodes_it_is_given(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    def listening() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    mcp = run_line("mcp", tmp_path, MCP_PORT=str(port), MCP_STATE=str(tmp_path / "mcp"),
                   MCP_EPISODES="--episode steady:7", STOREBENCH_ALLOWED_HOSTS="localhost")
    try:
        wait_until(mcp, listening, "MCP server", tmp_path / "mcp.log")
    finally:
        stop(mcp)


@pytest.mark.parametrize("name", ["web", "worker", "beat"])
def test_a_process_whose_settings_are_refused_says_so_in_one_line_and_stops(name, tmp_path):
    """Without a secret the settings refuse to load; uvicorn's workers, each importing them, had
    restarted forever (a traceback each), and celery printed the refusal under a traceback."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    clean.update(PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", PORT="0",
                 BEAT_SCHEDULE_FILE=str(tmp_path / "beat" / "schedule"))
    done = subprocess.run(["sh", "-c", procfile_line(name)], cwd=REPO, env=clean, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [done.stderr.splitlines()[0]]
    assert done.stderr.startswith("manage.py: DJANGO_SECRET_KEY is not set.")
