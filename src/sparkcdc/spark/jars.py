"""Where the Maven-fetched JVM jars live, and the Spark settings that attach them."""

from __future__ import annotations

import os
from pathlib import Path


class JarsMissingError(RuntimeError):
    """The JVM jars were not fetched; the message says which command fetches them."""


def jars_root() -> Path:
    """``$SPARKCDC_JARS_DIR`` or the checkout's ``jvm/jars`` (filled by scripts/bootstrap.sh)."""
    env = os.environ.get("SPARKCDC_JARS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "jvm" / "jars"


def jar_files(group: str) -> list[Path]:
    """The jars of one group: ``spark`` (handed to Spark) or ``kafka`` (the broker)."""
    folder = jars_root() / group
    jars = sorted(folder.glob("*.jar"))
    if not jars:
        raise JarsMissingError(
            f"no JVM jars in {folder}; run ./scripts/bootstrap.sh (or `make setup`) to fetch "
            "them with Maven, or point SPARKCDC_JARS_DIR at a folder that has them"
        )
    return jars
