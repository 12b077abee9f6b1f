"""The sink fixtures of the sink conformance suite: Delta (upsert and history), JDBC into
PostgreSQL and MariaDB, Kafka (debezium-json) and the console."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparkcdc.core.identifiers import quoted
from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.console.config import ConsoleSinkConfig
from sparkcdc.sinks.console.sink import ConsoleSink
from tests.conformance.connector import BadOption
from tests.conformance.sink import SinkUnderTest, TargetRead


class DeltaUnderTest(SinkUnderTest):
    name = "delta"

    def __init__(self, mode: str, writer: str = "spark", catalog: bool = False) -> None:
        self.mode = mode
        self.writer = writer
        #: Targets by catalog name (external tables in this session's in-memory catalog,
        #: sinks/delta/catalog.py) rather than by folder.
        self.catalog = catalog
        self.variant = (
            f"delta-{mode}"
            + ("" if writer == "spark" else f"-{writer}")
            + ("-catalog" if catalog else "")
        )

    #: The columns Spark-written upsert targets are clustered by (``cluster.key``).
    CLUSTERED = ("id",)

    def options(self, scratch: Path, stem: str) -> dict[str, str]:
        # Spark-written upsert targets are created clustered (liquid clustering): every
        # test of the suite then writes clustered targets too
        clustered = self.writer == "spark" and self.mode == "upsert"
        cluster = {"cluster.key": f"conf.{stem}:{','.join(self.CLUSTERED)}"} if clustered else {}
        if self.catalog:
            return {
                "table-name": f"spark_catalog.{stem}.{{table}}",
                "location": str(scratch / "external"),
                "changelog-mode": self.mode,
                "table.properties.owner.team": "conformance",
                "table.properties.note": "it's a \\ 'quoted' value",
                **cluster,
            }
        return {
            "path": str(scratch / "lake"),
            "changelog-mode": self.mode,
            "writer": self.writer,
            **cluster,
        }

    def check_created(
        self, spark: Any, sink: Sink, table: SinkTable, options: dict[str, str]
    ) -> None:
        """A target created with ``cluster.key`` is clustered by its columns; table
        properties arrive as given (quotes and backslashes are values, not SQL)."""
        path = sink.target_path(table.source)  # type: ignore[attr-defined]
        detail = spark.sql(f"DESCRIBE DETAIL delta.{quoted(path)}").first()
        expected = list(self.CLUSTERED) if "cluster.key" in options else []
        assert list(detail["clusteringColumns"] or []) == expected
        if "table.properties.note" in options:
            assert detail["properties"]["note"] == options["table.properties.note"]

    def check_comments(
        self, spark: Any, sink: Sink, table: SinkTable, columns: Sequence[str]
    ) -> None:
        """Column comments in the schema's field metadata, the table's as its description."""
        path = sink.target_path(table.source)  # type: ignore[attr-defined]
        fields = {f.name: f for f in spark.read.format("delta").load(path).schema}
        assert {c: fields[c].metadata.get("comment") for c in columns} == {
            c: table.comments.column(c) for c in columns
        }
        detail = spark.sql(f"DESCRIBE DETAIL delta.{quoted(path)}").first()
        assert detail["description"] == table.comments.table

    def exists(self, spark: Any, sink: Sink, table: SinkTable) -> bool | None:
        if self.catalog:
            return bool(spark.catalog.tableExists(sink.target_of(table)))
        return Path(sink.target_path(table.source), "_delta_log").exists()  # type: ignore[attr-defined]

    def bad_options(self) -> list[BadOption]:
        return [
            BadOption({"changelog-mode": "merge"}, r"'changelog-mode'.*upsert, append"),
            BadOption({"path": "x", "location": "y"}, r"'location' is for catalog tables"),
            BadOption({"writer": "native"}, r"'writer'.*'writer: spark' for catalog tables"),
            BadOption({"table-name": "a.b.c.{table}"}, r"'catalog\.schema\.table'"),
            BadOption({"path": "x", "table-name": "{schema}"}, r"'table-name'.*placeholders"),
            BadOption({"path": "x", "concurrent-writes": "0"}, r"'concurrent-writes'"),
            BadOption({"path": "x", "writer": "rust"}, r"'writer'.*spark, native"),
            BadOption({"path": "hdfs://nn/lake", "writer": "native"}, r"'writer'.*'writer: spark'"),
            BadOption(
                {"path": "x", "writer": "spark", "storage-options.AWS_REGION": "eu-west-1"},
                r"storage-options.*spark-conf",
            ),
            BadOption(
                {"path": "x", "writer": "native", "cluster.key": "db.t:id"},
                r"'cluster\.key'.*'writer: spark'",
            ),
            BadOption({"cluster.key": "db.t"}, r"'cluster\.key'.*'db\.table:col1,col2'"),
        ]


class JdbcUnderTest(SinkUnderTest):
    name = "jdbc"

    def __init__(
        self,
        server: EmbeddedPostgres | EmbeddedMariaDB,
        database: str,
        user: str,
        password: str,
    ) -> None:
        self.server = server
        self.database = database
        self.user, self.password = user, password
        self.family = "postgresql" if isinstance(server, EmbeddedPostgres) else "mariadb"
        self.variant = f"jdbc-{self.family}"

    def options(self, scratch: Path, stem: str) -> dict[str, str]:
        server = self.server
        return {
            "url": f"{self.family}://{server.host}:{server.port}/{self.database}",
            "username": self.user,
            "password": self.password,
            "table-name": f"{stem}_{{table}}",
            "offsets-table": f"{stem}_offsets",
        }

    def exists(self, spark: Any, sink: Sink, table: SinkTable) -> bool | None:
        name = sink.target_of(table)  # qualifier.name
        assert name is not None
        qualifier, _, target = name.partition(".")
        default = "public" if self.family == "postgresql" else self.database
        qualifier = qualifier or default
        sql = (
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name = %s"
        )
        if isinstance(self.server, EmbeddedPostgres):
            rows = self.server.execute(sql, (qualifier, target), dbname=self.database)
        else:
            rows = self.server.execute(sql, (qualifier, target), database=self.database)
        return bool(rows[0][0])

    def check_comments(
        self, spark: Any, sink: Sink, table: SinkTable, columns: Sequence[str]
    ) -> None:
        """Column comments as the catalog has them (the table's comment is the sink's
        mark, not the source's)."""
        name = sink.target_of(table)
        assert name is not None
        qualifier, _, target = name.partition(".")
        if isinstance(self.server, EmbeddedPostgres):
            rows = self.server.execute(
                "SELECT a.attname, col_description(a.attrelid, a.attnum) FROM pg_attribute a "
                "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON "
                "n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0",
                (qualifier or "public", target),
                dbname=self.database,
            )
        else:
            rows = self.server.execute(
                "SELECT COLUMN_NAME, COLUMN_COMMENT FROM information_schema.COLUMNS WHERE "
                "TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (qualifier or self.database, target),
                database=self.database,
            )
        found = {str(n): c for n, c in rows}
        assert {c: found[c] for c in columns} == {c: table.comments.column(c) for c in columns}

    def bad_options(self) -> list[BadOption]:
        return [
            BadOption({"url": "oracle://h/db", "username": "u"}, r"'url'.*valid schemes"),
            BadOption({"url": "postgresql://h:99999/db", "username": "u"}, r"'url'.*port"),
            BadOption({"url": "postgresql://h/db"}, r"'username'"),
            BadOption(
                {"url": "postgresql://h/db", "username": "u", "table-name": "{nope}"},
                r"'table-name'",
            ),
        ]


class KafkaUnderTest(SinkUnderTest):
    """debezium-json, the format that can say a truncate; read back by replaying its
    records in order (a truncate empties the mirror)."""

    name = "kafka"
    variant = "kafka-debezium-json"

    def __init__(self, kafka: EmbeddedKafka) -> None:
        self.kafka = kafka

    def options(self, scratch: Path, stem: str) -> dict[str, str]:
        return {
            "properties.bootstrap.servers": self.kafka.bootstrap_servers,
            "value.format": "debezium-json",
            "topic-pattern": f"{stem}.{{table}}",
        }

    def _records(self, spark: Any, sink: Sink, table: SinkTable) -> list[dict[str, Any]]:
        from sparkcdc.spark.kafka.source import read_kafka

        topic = sink.config.topic_of(table.source)  # type: ignore[attr-defined]
        raw = read_kafka(spark, self.kafka.bootstrap_servers, topic, streaming=False)
        ordered = raw.orderBy("partition", "offset").select("value").collect()
        return [json.loads(bytes(r[0])) for r in ordered]

    def read_back(self, spark: Any, sink: Sink, table: SinkTable) -> TargetRead:
        records = self._records(spark, sink, table)
        texts = [json.dumps(r, sort_keys=True) for r in records]
        return TargetRead(self._replayed(records, table), len(texts) - len(set(texts)))

    def _replayed(
        self, records: list[dict[str, Any]], table: SinkTable
    ) -> dict[Any, tuple[Any, ...]]:
        rows: dict[Any, tuple[Any, ...]] = {}
        for record in records:
            op = record["op"]
            before: dict[str, Any] = record.get("before") or {}
            after: dict[str, Any] = record.get("after") or {}
            if op == "t":
                rows.clear()
                continue
            rows.pop(before.get(table.key[0]), None)  # a delete, or an update's old key
            if after:
                values = tuple(after.get(c) for c in table.columns)
                rows[values[0]] = values
        return rows

    def bad_options(self) -> list[BadOption]:
        return [
            BadOption({}, r"'properties\.bootstrap\.servers'"),
            BadOption(
                {"properties.bootstrap.servers": "h:9092", "value.format": "avro"},
                r"'value\.format'.*debezium-json",
            ),
            BadOption(
                {"properties.bootstrap.servers": "h:9092", "topic-pattern": "{x}"},
                r"'topic-pattern'",
            ),
        ]


#: A printed row: ``+I[1, 10, x]`` (after an optional ``prefix> ``).
_ROW = re.compile(r"^(?:.*?> )?([+-][IUD])\[(.*)\]$")


class ConsoleUnderTest(SinkUnderTest):
    """Read back by replaying the printed lines (values printed as Flink prints them)."""

    name = "console"
    variant = "console"

    def __init__(self) -> None:
        self.out = io.StringIO()

    def options(self, scratch: Path, stem: str) -> dict[str, str]:
        self.out = io.StringIO()
        return {}

    def create(self, options: dict[str, str], pipeline: str) -> Sink:
        return ConsoleSink(ConsoleSinkConfig.from_options(options), out=self.out)

    def read_back(self, spark: Any, sink: Sink, table: SinkTable) -> TargetRead:
        lines = [line for line in self.out.getvalue().splitlines() if _ROW.match(line)]
        return TargetRead(self._replayed(table), len(lines) - len(set(lines)))

    def _replayed(self, table: SinkTable) -> dict[Any, tuple[Any, ...]]:
        rows: dict[Any, tuple[Any, ...]] = {}
        types = [f.dataType.simpleString() for f in table.schema.fields]
        for line in self.out.getvalue().splitlines():
            if line.endswith("truncate table"):
                rows.clear()
                continue
            found = _ROW.match(line)
            if found is None:
                continue  # a schema change or a drop
            kind, text = found.groups()
            values = tuple(_value(v, t) for v, t in zip(text.split(", "), types, strict=False))
            if kind in ("+I", "+U"):
                rows[values[0]] = values
            else:
                rows.pop(values[0], None)
        return rows

    def bad_options(self) -> list[BadOption]:
        return [
            BadOption({"standard-error": "maybe"}, r"'standard-error'.*true, false"),
            BadOption({"no.such.option": "1"}, r"unknown option 'no\.such\.option'"),
        ]


def _value(text: str, kind: str) -> Any:
    if text == "null":
        return None
    return int(text) if kind in ("int", "bigint") else text
