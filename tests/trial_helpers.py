"""Helpers for tests that edit trial folders or need explorer trials without playing one."""
import json
from decimal import Decimal
from pathlib import Path

from environment.artifacts import file_digest


def resign(folder: Path) -> None:
    """Rewrite the manifest's checksums, as a harness writing its own folder (or a forger who
    rewrites them too) would: only the checks beyond the checksums can then catch an edit."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = {name: file_digest((folder / name).read_bytes()) for name in manifest["files"]}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def stored_trial(n: int, task: str, composite: str, kind: str = "anchor", player: str = "absentee", study: str = ""):
    """An explorer trial row with made-up figures (its score JSON is large, as a real one is)."""
    from explorer.models import Trial

    zero = Decimal(0)
    return Trial.objects.create(
        content_hash=f"h{n}", source_path=f"/trials/{n}", integrity=Trial.Integrity.VERIFIED, task_id=task, seed=7,
        player_kind=kind, player=player, study=study, termination=Trial.Termination.HORIZON, windows_played=30,
        windows_total=30, turns=10, operations_spent=10, reward_composite=Decimal(composite), business=zero,
        reliability=zero, continuity=zero, business_raw=zero, net_assets=zero, score={"big": "x" * 1000},
        world_hash="w", task_file_hash="t")
