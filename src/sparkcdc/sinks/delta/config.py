"""Options of the Delta sink: where the target tables go and how changes land in them.

No pyspark and no delta here: a pipeline file's sink block validates offline and fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from sparkcdc.core.errors import OptionError
from sparkcdc.core.folders import is_uri
from sparkcdc.core.options import OptionSpec, parse_bool, parse_int, parse_options

CHANGELOG_MODES = ("upsert", "append")
#: Who writes the targets' rows: Spark's Delta writer, or delta-rs (sinks/delta/native.py).
WRITERS = ("spark", "native")


def location_join(location: str, name: str) -> str:
    """``name`` (a folder, maybe ``db/table``) under ``location``, a URI or a local folder."""
    if is_uri(location):
        return f"{location.rstrip('/')}/{name}"
    return str((Path(location) / name).resolve())


SPECS = (
    OptionSpec(
        "path",
        required=True,
        hint="the folder that holds the target Delta tables",
        doc="folder of the target tables: a local folder (relative to the pipeline file) or "
        "a URI of storage every Spark executor reaches (`s3a://bucket/lake`, "
        "`abfss://...`, `hdfs://...`, `file:///...`)",
    ),
    OptionSpec(
        "table-name",
        default="{database}/{table}",
        doc="target folder under `path`, with `{database}` and `{table}` placeholders",
    ),
    OptionSpec(
        "changelog-mode",
        choices=CHANGELOG_MODES,
        default="upsert",
        doc="`upsert`: the target mirrors the source; `append`: every change with "
        "`_change_type`, `_commit_version`, `_commit_timestamp` (a queryable history)",
    ),
    OptionSpec(
        "change-data-feed",
        parse_bool,
        True,
        doc="create `upsert` targets with `delta.enableChangeDataFeed` (downstream readers "
        "get the target's own change feed; `append` targets already are a change history)",
    ),
    OptionSpec(
        "deletion-vectors",
        parse_bool,
        True,
        doc="create `upsert` targets with `delta.enableDeletionVectors`: a MERGE marks the "
        "rows it replaces instead of rewriting their files (readers of the target need "
        "deletion-vector support: Delta 2.3+, Databricks; `false` for older readers). A "
        "target under 4 MiB is rewritten all the same: cheaper there",
    ),
    OptionSpec(
        "writer",
        choices=WRITERS,
        default="spark",
        doc="who commits the rows: `spark` (Spark's Delta writer: a MERGE is a Spark query, "
        "~1-4 s a target) or `native` (delta-rs from the rows as Arrow: ~10-25 ms a merge, "
        "copy-on-write only, local folders and `file:` URIs only; a target with a table "
        "feature it cannot write is refused, one sparkcdc widened goes on with Spark's "
        "writer); docs/sinks-delta.md",
    ),
    OptionSpec(
        "concurrent-writes",
        parse_int(1, 64),
        4,
        doc="targets a batch writes at once, each from a driver thread: an append or MERGE "
        "of a few rows takes 0.3-4 s, most of it the driver's, so a batch that changes many "
        "tables pays their sum divided by the threads, as far as the driver's cores go; "
        "`1` writes them one after another",
    ),
)


@dataclass(frozen=True)
class DeltaSinkConfig:
    """The Delta sink's validated options."""

    #: Where the targets go: an absolute local folder, or a URI (``is_uri``) of storage every
    #: executor reaches (on a cluster of several machines, local folders are not shared).
    path: str
    #: Target folder under ``path``, with ``{database}`` and ``{table}`` placeholders.
    table_name: str
    changelog_mode: str
    #: Create targets with ``delta.enableChangeDataFeed``, so consumers can read the
    #: target's own changes (``table_changes``) downstream.
    change_data_feed: bool
    #: Create ``upsert`` targets with deletion vectors, so a MERGE's cost follows the rows
    #: it changes rather than the size of the files they are in.
    deletion_vectors: bool = True
    #: Targets a batch writes at once (threads of the driver, each with a session of its own).
    concurrent_writes: int = 4
    #: Who commits the rows: ``spark`` (Spark's Delta writer) or ``native`` (delta-rs).
    writer: str = "spark"

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> DeltaSinkConfig:
        opts = parse_options(options, SPECS, context="delta sink")
        pattern = opts["table-name"]
        try:
            pattern.format(database="d", table="t")
        except (KeyError, IndexError, ValueError):
            raise OptionError(
                f"delta sink: option 'table-name' has invalid value '{pattern}'; expected a "
                "path pattern using only the placeholders {database} and {table}"
            ) from None
        return cls(
            opts["path"],
            pattern,
            opts["changelog-mode"],
            opts["change-data-feed"],
            opts["deletion-vectors"],
            opts["concurrent-writes"],
            opts["writer"],
        )

    def __post_init__(self) -> None:
        if self.writer == "native" and is_uri(self.path) and not self.path.startswith("file:"):
            raise OptionError(
                f"delta sink: option 'writer' has value 'native', which writes local folders "
                f"and file: URIs only, not '{self.path}' ('path'); set 'writer: spark' for "
                "other storage"
            )

    def resolved(self, base_dir: Path | None) -> DeltaSinkConfig:
        """This config with a relative ``path`` taken from ``base_dir`` (the pipeline
        file's folder), so a pipeline writes to the same place from any working directory."""
        if base_dir is None or is_uri(self.path) or Path(self.path).is_absolute():
            return self
        return replace(self, path=str((base_dir / self.path).resolve()))

    @property
    def local_folder(self) -> Path | None:
        """``path`` as a local folder (checked writable before the start), or None for a URI
        (its storage is Hadoop's to reach: a wrong one fails the first write)."""
        return None if is_uri(self.path) else Path(self.path)
