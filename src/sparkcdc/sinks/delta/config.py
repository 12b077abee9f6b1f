"""Options of the Delta sink: where the target tables go and how changes land in them.

No pyspark and no delta here: a pipeline file's sink block validates offline and fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparkcdc.core.errors import OptionError
from sparkcdc.core.folders import is_uri
from sparkcdc.core.options import OptionSpec, parse_bool, parse_int, parse_options
from sparkcdc.core.secret import SecretSettings
from sparkcdc.core.table import TableId

CHANGELOG_MODES = ("upsert", "append")
#: Who writes the targets' rows: Spark's Delta writer, or delta-rs (sinks/delta/native.py).
WRITERS = ("spark", "native")
#: URI schemes of the storage the native writer reaches (besides local folders, ``file:``),
#: as ``native.SCHEMES`` maps them to delta-rs's.
NATIVE_SCHEMES = ("s3a", "s3", "abfss", "abfs", "gs")


def location_join(location: str, name: str) -> str:
    """``name`` (a folder, maybe ``db/table``) under ``location``, a URI or a local folder."""
    if is_uri(location):
        return f"{location.rstrip('/')}/{name}"
    return str((Path(location) / name).resolve())


#: ``table-name`` without ``path``: a catalog name per source table (``schema.table`` is in
#: Spark's session catalog).
CATALOG_TABLE_NAME = "{database}.{table}"
#: ``table-name`` with ``path``: a folder under it per source table.
FOLDER_TABLE_NAME = "{database}/{table}"
#: The prefix of options that become the properties of the tables the sink creates (as in
#: Flink CDC's Paimon and Iceberg sinks).
TABLE_PROPERTIES = "table.properties."
#: A table property the sink keeps itself (sinks/delta/sink.py: ``APPENDS_FOR``).
RESERVED_PROPERTIES = ("sparkcdc.appends-for",)
#: The option naming each new target's liquid clustering columns, written as Flink CDC's
#: Paimon and Iceberg sinks write ``partition.key``.
CLUSTER_KEY = "cluster.key"


def parse_cluster_keys(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``db.table:col1,col2;db.other:col``: per target table (its key as ``TableId.key``
    spells it, as the sink sees the table: a route's sink-table when routed), the columns
    it is clustered by."""
    found: dict[str, tuple[str, ...]] = {}
    for entry in (e.strip() for e in text.split(";")):
        if not entry:
            continue
        table, colon, columns = entry.rpartition(":")
        names = tuple(c.strip() for c in columns.split(","))
        if not colon or not table.strip() or not all(names):
            raise ValueError(
                "entries 'db.table:col1,col2' separated by ';' "
                "(e.g. 'app_db.orders:region,day;app_db.users:country')"
            )
        try:
            key = TableId.from_key(table.strip()).key
        except ValueError:
            key = TableId("", table.strip()).key  # a one-part target (the default namespace)
        if key in found:
            raise ValueError(f"one entry per table; '{table.strip()}' has two")
        found[key] = names
    return tuple(found.items())


SPECS = (
    OptionSpec(
        "path",
        hint="the folder that holds the target Delta tables, or no 'path' and a catalog "
        "name in 'table-name'",
        doc="folder of the target tables: a local folder (relative to the pipeline file) or "
        "a URI of storage every Spark executor reaches (`s3a://bucket/lake`, "
        "`abfss://...`, `hdfs://...`, `file:///...`). Without `path` the targets are "
        "tables in a Spark catalog, named by `table-name`",
        default_doc="(none: catalog tables)",
    ),
    OptionSpec(
        "table-name",
        doc="with `path`: target folder under it; without: the target's catalog name, "
        "`catalog.schema.table` or `schema.table` (Spark's session catalog). Placeholders "
        "`{database}` and `{table}`; a route's `sink-table` fills both "
        "(`sink-table: spark_catalog.lake.orders`)",
        default_doc="`{database}/{table}` with `path`, `{database}.{table}` without",
    ),
    OptionSpec(
        "location",
        doc="catalog tables only: create them as external tables in `<location>/<schema>/"
        "<table>` (a local folder relative to the pipeline file, or a URI); without it they "
        "are managed tables in the catalog's warehouse",
    ),
    OptionSpec(
        TABLE_PROPERTIES,
        prefix=True,
        doc="`table.properties.<key>: <value>`: a table property of every target the sink "
        "creates (`table.properties.delta.logRetentionDuration: interval 30 days`); an "
        "existing target keeps its own",
    ),
    OptionSpec(
        CLUSTER_KEY,
        parse_cluster_keys,
        (),
        doc="liquid clustering of the targets the sink creates: `db.table:col1,col2;"
        "db.other:col` (Flink CDC's `partition.key` form; the table as the sink sees it, "
        "a route's `sink-table` when routed), each created with Delta's `CLUSTER BY` "
        "(up to 4 columns); an entry naming no target is refused at the start (with "
        "`scan.newly-added-table.enabled`, not one a table created later may become); not "
        "with a transform's `partition-keys` for the same table, nor with `writer: native` "
        "(delta-rs cannot write clustered tables); an existing target keeps its layout",
        default_doc="(none)",
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
        "copy-on-write only; a target with a table feature it cannot write is refused, one "
        "sparkcdc widened goes on with Spark's writer); docs/sinks-delta.md",
    ),
    OptionSpec(
        "storage-options.",
        prefix=True,
        doc="`writer: native`: delta-rs's object store settings, passed through as they are "
        "(e.g. `storage-options.AWS_REGION`, `storage-options.AZURE_STORAGE_ACCOUNT_NAME`; "
        "values of secret names masked wherever the configuration is printed); Spark's "
        "writer takes its storage settings from "
        "`spark-conf` (`spark.hadoop.fs.s3a.*`) instead; docs/sinks-delta.md",
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
    path: str | None
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
    #: Without ``path``: catalog tables (``table_name`` names them), created external
    #: under ``location`` when set (sinks/delta/catalog.py).
    location: str | None = None
    #: ``table.properties.*``: properties of the targets the sink creates.
    table_properties: tuple[tuple[str, str], ...] = ()
    #: ``cluster.key``: per target (``TableId.key``), the columns a new one is clustered by.
    cluster_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()

    #: delta-rs's object store settings (``storage-options.*``), for ``writer: native``.
    storage_options: Mapping[str, str] = field(default_factory=SecretSettings)

    def cluster_columns(self, target: str) -> tuple[str, ...]:
        """The columns ``cluster.key`` clusters the target of key ``target`` by (empty:
        none)."""
        return dict(self.cluster_keys).get(target, ())

    def cluster_entries(self) -> dict[TableId, str]:
        """Each table ``cluster.key`` names, with its entry as the option spells it
        (``db.table:col1,col2``), for messages."""
        found = {}
        for key, columns in self.cluster_keys:
            table = TableId.from_key(key)
            found[table] = f"{table}:{','.join(columns)}"
        return found

    @property
    def catalog(self) -> bool:
        """Whether the targets are catalog tables (no ``path``), not folders."""
        return self.path is None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> DeltaSinkConfig:
        opts = parse_options(options, SPECS, context="delta sink")
        path, location = opts["path"], opts["location"]
        if path is not None and location is not None:
            raise OptionError(
                "delta sink: option 'location' is for catalog tables (no 'path'); with "
                "'path' the targets are folders under it: remove one of the two"
            )
        catalog = path is None
        pattern = opts["table-name"] or (CATALOG_TABLE_NAME if catalog else FOLDER_TABLE_NAME)
        try:
            sample = pattern.format(database="d", table="t")
        except (KeyError, IndexError, ValueError):
            raise OptionError(
                f"delta sink: option 'table-name' has invalid value '{pattern}'; expected a "
                "pattern using only the placeholders {database} and {table}"
            ) from None
        if catalog:
            from sparkcdc.sinks.delta.catalog import table_parts

            table_parts(sample, "option 'table-name'")
        for _, columns in opts[CLUSTER_KEY]:
            if len(columns) > 4:
                raise OptionError(
                    f"delta sink: option '{CLUSTER_KEY}' gives {len(columns)} columns "
                    f"({', '.join(columns)}); Delta clusters by at most 4"
                )
        properties = opts.groups.get(TABLE_PROPERTIES, {})
        reserved = [k for k in properties if k.lower() in RESERVED_PROPERTIES]
        if reserved:
            raise OptionError(
                f"delta sink: option '{TABLE_PROPERTIES}{reserved[0]}' sets a property the "
                "sink keeps itself (which pipeline's rows alone a target holds): remove it"
            )
        writer = opts["writer"]
        if catalog and not any(k.lower() == "writer" for k in options):
            writer = "spark"  # the one writer of catalog tables, whatever the default
        return cls(
            path,
            pattern,
            opts["changelog-mode"],
            opts["change-data-feed"],
            opts["deletion-vectors"],
            opts["concurrent-writes"],
            writer,
            location,
            tuple(properties.items()),
            cluster_keys=opts[CLUSTER_KEY],
            storage_options=SecretSettings(opts.groups.get("storage-options.", {})),
        )

    def __post_init__(self) -> None:
        if self.writer != "native":
            if self.storage_options:
                # catalog tables are written by Spark's writer alone
                other = "" if self.path is None else ", or set 'writer: native' (targets by 'path')"
                raise OptionError(
                    "delta sink: options 'storage-options.*' configure the native writer "
                    "(delta-rs); Spark's writer ('writer: spark') takes its storage settings "
                    f"from spark-conf (spark.hadoop.fs.*): move them there{other}"
                )
            return
        if self.cluster_keys:
            raise OptionError(
                f"delta sink: option '{CLUSTER_KEY}' asks for clustered targets, which the "
                "native writer (delta-rs) cannot write: set 'writer: spark', or remove "
                f"'{CLUSTER_KEY}'"
            )
        if self.path is None:
            raise OptionError(
                "delta sink: option 'writer' has value 'native', which writes targets by "
                "folder ('path'), not catalog tables ('table-name' without 'path'): set "
                "'writer: spark' for catalog tables, or give 'path'"
            )
        scheme = self.path.split("://", 1)[0].lower() if "://" in self.path else "file"
        if is_uri(self.path) and scheme not in (*NATIVE_SCHEMES, "file"):
            raise OptionError(
                f"delta sink: option 'writer' has value 'native', which writes local folders, "
                f"file: URIs and {', '.join(s + '://' for s in NATIVE_SCHEMES)} URIs, not "
                f"'{self.path}' ('path'); set 'writer: spark' for other storage"
            )

    def resolved(self, base_dir: Path | None) -> DeltaSinkConfig:
        """This config with a relative ``path`` taken from ``base_dir`` (the pipeline
        file's folder), so a pipeline writes to the same place from any working directory."""
        return replace(
            self, path=_resolved(self.path, base_dir), location=_resolved(self.location, base_dir)
        )

    @property
    def local_folder(self) -> Path | None:
        """``path`` (or a catalog sink's ``location``) as a local folder (checked writable
        before the start), or None for a URI (its storage is Hadoop's to reach: a wrong one
        fails the first write) or managed catalog tables."""
        folder = self.path if self.path is not None else self.location
        return None if folder is None or is_uri(folder) else Path(folder)


def _resolved(folder: str | None, base_dir: Path | None) -> str | None:
    """``folder`` taken from ``base_dir`` when it is a relative local folder."""
    if folder is None or base_dir is None or is_uri(folder) or Path(folder).is_absolute():
        return folder
    return str((base_dir / folder).resolve())
