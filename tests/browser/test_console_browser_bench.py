"""The browser benchmark (``python -m benchmarks.console_browser``) kept from rotting:
two windows of a steady shift played through the page's controls, the ledger of the
calls it made equal to their in-process replay."""
import socket

import pytest

from benchmarks.console_browser import run

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_windows_through_the_browser_replay_to_the_same_ledger(chromium_path):
    result = run("steady", 3, windows=2, port=_free_port())
    print(f"\n{result}")
    assert result.windows_played == 2
    assert result.row_actions.get("fulfill_order", 0) >= 1 and result.row_actions.get("refund_return", 0) >= 0
    assert result.operations >= 2 * 3  # reads, actions and end_window in each window
    assert result.ledger_server.startswith("sha256:") and result.ledgers_match, result
    assert result.components_match, result.mismatched
    assert result.inputs_per_operation <= 1.5  # one click per operation, plus a few confirmations
