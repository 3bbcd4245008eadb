"""Loading the world, fail closed.

The world's content hash is recorded in ``world.sha256`` beside this module.  A
world whose canonical form hashes to anything else (a changed generator, an edited
export, a corrupt file) is refused with :class:`WorldHashMismatch`: every task,
calibration and replay assumes exactly the recorded world.

Within a process the world is generated once and shared read-only by every
episode; episodes copy only the state they mutate.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from ..errors import ErrorCode, StoreBenchError
from .codec import canonical_bytes, content_hash, from_document
from .model import World

RECORDED_HASH_FILE = Path(__file__).with_name("world.sha256")

_cache: dict[str, tuple[World, str]] = {}


class WorldHashMismatch(StoreBenchError):
    code = ErrorCode.WORLD_HASH_MISMATCH


def recorded_hash() -> str:
    try:
        return RECORDED_HASH_FILE.read_text().strip()
    except FileNotFoundError as exc:
        raise WorldHashMismatch(
            f"no recorded world hash at {RECORDED_HASH_FILE}; run `storebench world hash --record` "
            "after reviewing the generator change") from exc


def _check(world: World, source: str, expected: str | None) -> str:
    actual = content_hash(world)
    want = expected if expected is not None else recorded_hash()
    if actual != want:
        raise WorldHashMismatch(
            f"the world from {source} hashes to {actual}, but the recorded world is {want}; "
            "refusing to load it (regenerate it, or if the generator changed on purpose, review "
            "the change and record the new hash with `storebench world hash --record`)")
    return actual


def load_world(path: str | Path | None = None, *, expected_hash: str | None = None) -> World:
    """The recorded world: generated in-process (cached), or read from an export file."""
    if path is None:
        if "generated" not in _cache:
            from .generate import generate

            world = generate()
            _cache["generated"] = (world, _check(world, "the generator", None))
        world, actual = _cache["generated"]
        if expected_hash is not None and actual != expected_hash:
            raise WorldHashMismatch(
                f"the world from the generator hashes to {actual}, but {expected_hash} was expected; "
                "refusing to load it")
        return world
    path = Path(path)
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
    except (OSError, EOFError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StoreBenchError(f"cannot read the world export {path}: {reason}; write one with "
                              "`storebench world export FILE`") from None
    try:
        world = from_document(json.loads(raw))
    except KeyError as exc:
        raise WorldHashMismatch(f"{path} is not a world export: it has no field {exc}") from exc
    except (ValueError, TypeError) as exc:
        raise WorldHashMismatch(f"{path} is not a world export: {exc}") from exc
    _check(world, str(path), expected_hash)
    return world


def world_hash(world: World | None = None) -> str:
    if world is None:
        load_world()
        return _cache["generated"][1]
    return content_hash(world)


def export_world(world: World, path: str | Path) -> None:
    data = canonical_bytes(world)
    path = Path(path)
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
