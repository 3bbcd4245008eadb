"""Helpers for tests that edit trial folders."""
import json
from pathlib import Path

from environment.artifacts import file_digest


def resign(folder: Path) -> None:
    """Rewrite the manifest's checksums, as a harness writing its own folder (or a forger who
    rewrites them too) would: only the checks beyond the checksums can then catch an edit."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = {name: file_digest((folder / name).read_bytes()) for name in manifest["files"]}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
