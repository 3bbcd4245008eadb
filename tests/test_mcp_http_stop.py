"""``storebench mcp --http`` stopped by a signal says where its trial folders went.

The server runs as a subprocess (``python -m mcp_client mcp --http``); once it answers, it
gets SIGINT (Ctrl-C) or SIGTERM (a supervisor).  Without ``--state`` the open episodes are
settled and each folder is named on stderr with the line stdio's ``storebench mcp``
prints; with ``--state`` the live sessions are kept for the next start, and it says so.
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2

REPO = Path(__file__).resolve().parent.parent
TASK = "short-runway"


def serve(*options: str) -> tuple[subprocess.Popen, str]:
    """Start the server on a free port; return it and its URL once it answers HTTP."""
    process = subprocess.Popen([sys.executable, "-m", "mcp_client", "mcp", "--http", "--port", "0", *options],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"(http://\S+/mcp)", line)
    assert match, (line, process.stderr.read() if process.poll() is not None else "")
    for _ in range(400):
        try:
            httpx2.post(match[1], json={}, timeout=5)  # 401: uvicorn serves, its signal handlers are in place
            break
        except httpx2.TransportError:
            time.sleep(0.05)
    return process, match[1]


def stop(process: subprocess.Popen, sig: int) -> tuple[int, str]:
    process.send_signal(sig)
    _out, err = process.communicate(timeout=120)
    return process.returncode, err


def test_sigint_settles_the_open_episode_and_says_where_its_folder_went(tmp_path):
    process, _url = serve("--episode", f"{TASK}:7", "--trials", str(tmp_path / "trials"))
    returncode, err = stop(process, signal.SIGINT)
    (folder,) = (tmp_path / "trials").iterdir()
    assert returncode == 0
    assert err == f"storebench: wrote {folder} (composite 0.000)\n"


def test_sigterm_settles_the_open_episode_instead_of_dying_with_it(tmp_path):
    process, _url = serve("--episode", f"{TASK}:7", "--trials", str(tmp_path / "trials"))
    returncode, err = stop(process, signal.SIGTERM)
    folders = list((tmp_path / "trials").iterdir()) if (tmp_path / "trials").exists() else []
    assert returncode == 0 and len(folders) == 1, (returncode, err)
    assert err == f"storebench: wrote {folders[0]} (composite 0.000)\n"


def test_sigint_with_a_state_folder_keeps_the_live_session_and_says_how_to_resume_it(tmp_path):
    state = tmp_path / "state"
    process, _url = serve("--episode", f"{TASK}:7", "--state", str(state))
    returncode, err = stop(process, signal.SIGINT)
    assert returncode == 0
    assert err == (f"storebench: 1 live session(s) kept in {state}; start the server again with --state {state} to "
                   "resume them\n")
    assert not (state / "trials").exists()
