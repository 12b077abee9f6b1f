"""What differs between PostgreSQL and MySQL/MariaDB targets: types, SQL, drivers, catalogs.

The sink (:mod:`sparkcdc.sinks.jdbc.sink`) holds the algorithm once: reduce each table's
changes to the last change per key, upsert and delete in batches, record the batch id, all
in one transaction. A dialect supplies only the pieces that differ, as small methods.

Drivers (psycopg 3, PyMySQL) and pyspark are imported inside methods: this module is loaded
by config validation and unit tests that need neither.

Type mapping (Spark type -> target type), chosen so every value the MySQL source emits
lands and reads back exactly:

========================  ===================  =================================================
Spark                     PostgreSQL           MySQL / MariaDB
========================  ===================  =================================================
boolean                   boolean              BOOLEAN (TINYINT(1))
byte / short              smallint             TINYINT / SMALLINT
int / long                integer / bigint     INT / BIGINT
decimal(p,s)              numeric(p,s)         DECIMAL(p,s)
float / double            real / double prec.  FLOAT / DOUBLE
date                      date                 DATE
timestamp_ntz             timestamp            DATETIME(6)
timestamp (an instant)    timestamptz          DATETIME(6) holding UTC (TIMESTAMP stops in 2038)
string                    text                 LONGTEXT; key columns VARCHAR(n) utf8mb4, binary
                                               NO PAD collation (InnoDB cannot index TEXT)
binary                    bytea                LONGBLOB; key columns VARBINARY(n)
========================  ===================  =================================================
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.errors import SchemaError, SparkCdcError
from sparkcdc.core.identifiers import quoted
from sparkcdc.core.table import TableId
from sparkcdc.core.tls import mysql_ssl_context
from sparkcdc.sinks.jdbc.config import MAX_IDENTIFIER, JdbcSinkConfig
from sparkcdc.sinks.jdbc.csv_blocks import MYSQL_CSV, POSTGRES_CSV, CsvForm
from sparkcdc.sinks.jdbc.own_files import connection_class

UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: Converts one Python value (None included) on its way to or from the target.
Converter = Callable[[Any], Any]


#: MySQL/MariaDB client and server errors of a connection gone or refused: can't connect,
#: gone away, lost during a query, server shutdown, killed, closed for inactivity.
_MYSQL_LOST = frozenset({1053, 1927, 2003, 2006, 2013, 4031})
#: MySQL/MariaDB errors refusing LOAD DATA LOCAL (``local_infile`` off; MySQL 8.0's own).
_LOAD_REFUSED = frozenset({1148, 3948, 4166})

#: CSV bytes one ``LOAD DATA`` statement takes: each of the two temporary files holds this
#: much at most, and the last load, which nothing overlaps, is this big at most.
LOAD_BYTES = 16 << 20

log = logging.getLogger(__name__)

#: Connect failures that waiting does not cure.
#: A connect failure that waiting will not cure: a refused login, a missing database, a
#: certificate check that failed, TLS asked of a server without it, a pg_hba.conf without
#: an entry for us. (Not every "SSL" message: a TLS connection cut by a restart says
#: "SSL SYSCALL error" and is worth retrying.)
_REFUSED_LOGIN = re.compile(
    r"authentication|access denied|does not exist|unknown database|certificate|pg_hba"
    r"|does not support SSL|SSL is required",
    re.I,
)


class SinkError(SparkCdcError):
    """The target cannot be reached or cannot take the rows (message says why and what to do)."""

    #: The server could not be reached (a connect failure that may pass: a restart).
    lost: bool = False


@dataclass(frozen=True)
class Target:
    """One source table's target: where it lives and the columns the sink writes."""

    source: TableId
    qualifier: str | None  #: schema (PostgreSQL) or database (MySQL); None: the default
    name: str
    schema: Any  #: Spark StructType of the source columns
    key: tuple[str, ...]
    #: The source's column comments (``include-comments.enabled``) for the columns the
    #: sink creates; the table's own comment holds the sink's mark (:data:`TARGET_MARK`)
    comments: Comments = NO_COMMENTS

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.schema.fields)

    def __str__(self) -> str:
        return self.name if self.qualifier is None else f"{self.qualifier}.{self.name}"


def spark_type_name(data_type: Any) -> str:
    """Spark's simple name of a type ('timestamp_ntz', 'decimal(10,2)', ...)."""
    return str(data_type.simpleString())


def _is(data_type: Any, name: str) -> bool:
    return type(data_type).__name__ == name


class TargetDialect(ABC):
    """SQL, types and driver calls of one target family."""

    family: str
    #: Parameters one statement may carry (PostgreSQL's protocol limit is 65535).
    max_parameters: int = 60_000
    #: Whether snapshot rows can be bulk-loaded (:meth:`copy_csv`).
    copies_csv: bool = False
    #: Whether the bulk load needs a target that holds this pipeline's rows only (a key
    #: already there fails it), or takes any target (it finds such keys itself).
    loads_owned_only: bool = True
    #: The CSV the bulk load reads.
    csv_form: CsvForm = POSTGRES_CSV

    def __init__(self, config: JdbcSinkConfig) -> None:
        self.config = config

    # -- names -----------------------------------------------------------------------------

    @abstractmethod
    def quote(self, name: str) -> str:
        """A quoted identifier, '%' doubled (both drivers use %s placeholders). Statements
        holding one are always executed with parameters (``()`` when there are none):
        without any, neither driver turns ``%%`` back into ``%``."""

    def table_sql(self, qualifier: str | None, name: str) -> str:
        quoted = self.quote(name)
        return quoted if qualifier is None else f"{self.quote(qualifier)}.{quoted}"

    def check_identifier(self, what: str, name: str) -> None:
        limit = MAX_IDENTIFIER[self.family]
        if not name or len(name.encode()) > limit:
            raise SinkError(
                f"jdbc sink: {what} name '{name}' is empty or longer than {limit} bytes, the "
                f"target's identifier limit; change option 'table-name' or 'offsets-table'"
            )

    # -- connections -----------------------------------------------------------------------

    @abstractmethod
    def connect(self) -> Any:
        """A driver connection in manual-commit mode, session set up (UTC, strictness)."""

    def connection_error(self, exc: BaseException) -> SinkError:
        """A connect failure, with the password scrubbed from the driver's message;
        ``lost`` when the server could not be reached (it may come back)."""
        message = str(exc)
        secret = self.config.password.reveal()
        if secret:
            message = message.replace(secret, "******")
        error = SinkError(
            f"jdbc sink: cannot connect to {self.config.url} as '{self.config.username}': {message}"
        )
        error.lost = self.lost_connection(exc) and not _REFUSED_LOGIN.search(message)
        return error

    def lost_connection(self, exc: BaseException) -> bool:
        """Whether ``exc`` says the server went away or cannot be reached now (a restart),
        not that the batch is wrong: then the batch's transaction is tried again."""
        return bool(getattr(exc, "lost", False))

    # -- catalog ---------------------------------------------------------------------------

    @abstractmethod
    def default_qualifier(self, cur: Any) -> str:
        """The schema (PostgreSQL) or database (MySQL) unqualified names resolve to."""

    @abstractmethod
    def ensure_qualifier(self, cur: Any, qualifier: str) -> None:
        """Create the schema/database when it does not exist yet."""

    @abstractmethod
    def existing_columns(self, cur: Any, qualifier: str, name: str) -> list[str] | None:
        """The table's column names, or None when the table does not exist."""

    @abstractmethod
    def unique_keys(self, cur: Any, qualifier: str, name: str) -> list[set[str]]:
        """Column sets of the table's primary key and unique constraints."""

    def check_engine(self, cur: Any, qualifier: str, name: str) -> None:
        """Fail when the table cannot take part in a transaction (MySQL's MyISAM...)."""
        del cur, qualifier, name

    def same_column(self, a: str, b: str) -> bool:
        return a == b

    # -- DDL -------------------------------------------------------------------------------

    @abstractmethod
    def column_type(self, field: Any, key: bool, key_bytes: int) -> str:
        """The target type of a Spark field; ``key_bytes`` is this key column's share of the
        index length (MySQL's InnoDB limit)."""

    def unsupported(self, field: Any) -> SchemaError:
        return SchemaError(
            f"jdbc sink: column '{field.name}' has Spark type "
            f"'{spark_type_name(field.dataType)}', which the {self.family} target cannot hold "
            "(supported: boolean, byte, short, int, long, decimal, float, double, date, "
            "timestamp, timestamp_ntz, string, binary)"
        )

    def widen_column_sql(self, table_sql: str, field: Any, column_type: str) -> str:
        """Changes a column's type to a wider one (values kept)."""
        return f"ALTER TABLE {table_sql} ALTER COLUMN {self.quote(field.name)} TYPE {column_type}"

    def key_shares(self, target: Target) -> dict[str, int]:
        """Index bytes each variable-length key column may use (see :meth:`column_type`)."""
        del target
        return {}

    def column_definition(self, target: Target, field: Any, shares: Mapping[str, int]) -> str:
        """A column of a new target as CREATE TABLE writes it (its name apart)."""
        is_key = field.name in target.key
        not_null = " NOT NULL" if is_key else ""
        return f"{self.column_type(field, is_key, shares.get(field.name, 0))}{not_null}"

    def comment_column(self, cur: Any, target: Target, name: str) -> None:
        """Give column ``name`` its source comment by a statement of its own (PostgreSQL's
        ``COMMENT ON``); a dialect without one writes comments where it defines columns
        (:meth:`create_target`, :meth:`add_column`)."""
        raise NotImplementedError(f"{type(self).__name__} comments columns where it defines them")

    def create_target(self, cur: Any, target: Target) -> None:
        """Create ``target`` with its columns' comments (``include-comments.enabled``),
        then mark it as a sink's target (:meth:`mark_target`): a marked table is taken back
        as it is, so nothing may come after the mark. One transaction here (PostgreSQL's
        DDL is transactional; the sink's ``open`` commits it): a crash keeps none of it."""
        cur.execute(self.create_table_sql(target), ())
        for field in target.schema.fields:
            if target.comments.column(field.name) is not None:
                self.comment_column(cur, target, field.name)
        self.mark_target(cur, target)

    def add_column(self, cur: Any, target: Target, field: Any, column_type: str) -> None:
        """Add ``field`` as a nullable column of ``column_type``, with its comment."""
        table_sql = self.table_sql(target.qualifier, target.name)
        cur.execute(
            f"ALTER TABLE {table_sql} ADD COLUMN {self.quote(field.name)} {column_type}", ()
        )
        if target.comments.column(field.name) is not None:  # include-comments.enabled
            self.comment_column(cur, target, field.name)

    def column_sql(self, target: Target, field: Any, shares: Mapping[str, int]) -> str:
        """A column of CREATE TABLE: its name and definition."""
        return f"{self.quote(field.name)} {self.column_definition(target, field, shares)}"

    def create_table_sql(self, target: Target) -> str:
        shares = self.key_shares(target)
        lines = [self.column_sql(target, field, shares) for field in target.schema.fields]
        lines.append(f"PRIMARY KEY ({', '.join(self.quote(k) for k in target.key)})")
        body = ",\n  ".join(lines)
        return f"CREATE TABLE {self.table_sql(target.qualifier, target.name)} (\n  {body}\n)"

    @abstractmethod
    def create_offsets_sql(self, table_sql: str) -> str:
        """DDL of the offsets table (pipeline, batch_id, source_offset, updated_at)."""

    # -- DML -------------------------------------------------------------------------------

    @abstractmethod
    def upsert_sql(self, target: Target, rows: int, keep: Collection[str] = ()) -> str:
        """Insert-or-update of ``rows`` rows (all columns, in schema order); an update
        leaves the columns in ``keep`` as they are (a row read again: its kept columns)."""

    def delete_sql(self, target: Target, rows: int) -> str:
        """Delete of ``rows`` keys: ``(k1, k2) IN ((%s, %s), ...)``."""
        keys = [self.quote(k) for k in target.key]
        one = "(" + ", ".join(["%s"] * len(keys)) + ")"
        left = keys[0] if len(keys) == 1 else "(" + ", ".join(keys) + ")"
        items = ", ".join(["%s" if len(keys) == 1 else one] * rows)
        table = self.table_sql(target.qualifier, target.name)
        return f"DELETE FROM {table} WHERE {left} IN ({items})"

    def copy_csv(self, cur: Any, target: Target, blocks: Iterator[tuple[bytes, int]]) -> int | None:
        """Bulk-load ``blocks`` (CSV text of all columns in :attr:`csv_form`, rows each:
        ``csv_blocks``) into ``target``; how many rows, or None when the target refused
        some and nothing of them stayed (they are to be upserted). Only where
        :attr:`copies_csv`."""
        raise NotImplementedError(f"{self.family} targets have no bulk load")

    def owner(self, cur: Any, target: Target) -> str | None:
        """The pipeline ``target`` is marked as holding the rows of only (None: unmarked,
        or a family without marks)."""
        del cur, target
        return None

    def is_empty(self, cur: Any, target: Target) -> bool:
        """Whether ``target`` holds no row."""
        cur.execute(
            f"SELECT EXISTS (SELECT 1 FROM {self.table_sql(target.qualifier, target.name)})", ()
        )
        return not cur.fetchone()[0]

    def mark_owner(self, cur: Any, target: Target, pipeline: str) -> bool:
        """Mark ``target`` as holding ``pipeline``'s rows only, if it is empty; whether it
        is marked now."""
        del cur, target, pipeline
        return False

    def unmark_owner(self, cur: Any, target: Target) -> None:
        """Remove ``target``'s mark (:meth:`mark_owner`), if it has one."""
        del cur, target

    @abstractmethod
    def is_target(self, cur: Any, target: Target) -> bool:
        """Whether the table is marked as a sink's target (:meth:`mark_target`)."""

    @abstractmethod
    def mark_target(self, cur: Any, target: Target) -> None:
        """Mark the table as a sink's target (its comment: :data:`TARGET_MARK`), so a
        later run takes it back without ``adopt-existing-tables``."""

    def rows_per_statement(self, params_per_row: int) -> int:
        return max(1, min(self.config.batch_size, self.max_parameters // max(1, params_per_row)))

    @abstractmethod
    def insert_offsets_row_sql(self, table_sql: str) -> str:
        """Insert (pipeline, -1) unless the pipeline's row exists, so it can be locked."""

    def lock_offsets_sql(self, table_sql: str) -> str:
        return f"SELECT batch_id FROM {table_sql} WHERE pipeline = %s FOR UPDATE"

    @abstractmethod
    def update_offsets_sql(self, table_sql: str) -> str:
        """Set batch_id, source_offset, updated_at of one pipeline (params in that order)."""

    @abstractmethod
    def begin_consistent_read(self, conn: Any) -> None:
        """Start a read-only transaction whose statements all see one snapshot (call it
        with no transaction open)."""

    # -- values ----------------------------------------------------------------------------

    def select_for_write(self, field: Any) -> Any:
        """The Spark column the sink reads for ``field``: instants as epoch microseconds,
        because PySpark renders TimestampType in the driver's local zone."""
        from pyspark.sql import functions as F

        column = F.col(quoted(field.name))
        return F.unix_micros(column) if _is(field.dataType, "TimestampType") else column

    def to_target(self, field: Any) -> Converter | None:
        """Python value from Spark -> driver parameter (None: pass as is)."""
        if _is(field.dataType, "TimestampType"):
            return self.instant
        if _is(field.dataType, "BinaryType"):
            return _to_bytes
        return None

    @abstractmethod
    def instant(self, micros: int | None) -> datetime | None:
        """Epoch microseconds -> what the target's instant column takes."""

    def select_for_read(self, field: Any) -> str:
        """The SELECT-list item that reads ``field`` back exactly."""
        return self.quote(field.name)

    def from_target(self, field: Any) -> Converter | None:
        """Driver value -> the Python value Arrow/Spark expects (None: as is)."""
        if _is(field.dataType, "BinaryType"):
            return _to_bytes
        return None


def _pymysql_tls(tls: Mapping[str, str]) -> dict[str, Any]:
    """PyMySQL's TLS arguments for the ``jdbc.properties.ssl*`` settings. Without any,
    PyMySQL's own default stays: TLS when the server offers it, unverified."""
    context = mysql_ssl_context(tls)
    if context is not None:
        return {"ssl": context}
    return {"ssl_disabled": True} if tls else {}


def _to_bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _epoch_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


# ------------------------------------------------------------------------------------------


#: A PostgreSQL target's comment while it holds one pipeline's rows only (then the
#: snapshot's rows, whose keys it cannot have, are bulk-loaded with COPY).
OWNER_MARK = "sparkcdc.appends-for="
#: A target's comment otherwise: the sink created it, found it empty, or was told to
#: adopt it (``adopt-existing-tables``). A non-empty table without either mark is
#: someone else's.
TARGET_MARK = "sparkcdc.target"


class PostgresTarget(TargetDialect):
    """PostgreSQL 12+ through psycopg 3."""

    family = "postgresql"
    max_parameters = 65_535
    copies_csv = True

    _TYPES: ClassVar[dict[str, str]] = {
        "BooleanType": "boolean",
        "ByteType": "smallint",
        "ShortType": "smallint",
        "IntegerType": "integer",
        "LongType": "bigint",
        "FloatType": "real",
        "DoubleType": "double precision",
        "DateType": "date",
        "TimestampNTZType": "timestamp",
        "TimestampType": "timestamptz",
        "StringType": "text",
        "BinaryType": "bytea",
    }

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""').replace("%", "%%") + '"'

    def connect(self) -> Any:
        import psycopg

        url = self.config.url
        tls: dict[str, Any] = dict(self.config.tls)  # libpq's sslmode/sslrootcert/...
        try:
            conn = psycopg.connect(
                host=url.host,
                port=url.port,
                dbname=url.database,
                user=self.config.username,
                password=self.config.password.reveal(),
                autocommit=False,
                options="-c TimeZone=UTC",
                connect_timeout=30,
                **tls,
            )
        except psycopg.Error as exc:
            raise self.connection_error(exc) from None
        return conn

    def lost_connection(self, exc: BaseException) -> bool:
        import psycopg

        return super().lost_connection(exc) or isinstance(
            exc, psycopg.OperationalError | psycopg.InterfaceError
        )

    def default_qualifier(self, cur: Any) -> str:
        cur.execute("SELECT current_schema()")
        return str(cur.fetchone()[0])

    def ensure_qualifier(self, cur: Any, qualifier: str) -> None:
        cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (qualifier,))
        if cur.fetchone() is None:
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {self.quote(qualifier)}", ())

    def existing_columns(self, cur: Any, qualifier: str, name: str) -> list[str] | None:
        cur.execute(
            "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND "
            "c.relname = %s AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT "
            "a.attisdropped ORDER BY a.attnum",
            (qualifier, name),
        )
        names = [str(r[0]) for r in cur.fetchall()]
        if names:
            return names
        cur.execute(
            "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s",
            (qualifier, name),
        )
        return [] if cur.fetchone() else None

    def unique_keys(self, cur: Any, qualifier: str, name: str) -> list[set[str]]:
        cur.execute(
            "SELECT array_agg(a.attname::text) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey) "
            "WHERE n.nspname = %s AND c.relname = %s AND i.indisunique AND i.indpred IS NULL "
            "AND i.indexprs IS NULL GROUP BY i.indexrelid",
            (qualifier, name),
        )
        return [set(r[0]) for r in cur.fetchall()]

    def column_type(self, field: Any, key: bool, key_bytes: int) -> str:
        data_type = field.dataType
        if _is(data_type, "DecimalType"):
            return f"numeric({data_type.precision},{data_type.scale})"
        try:
            return self._TYPES[type(data_type).__name__]
        except KeyError:
            raise self.unsupported(field) from None

    def create_offsets_sql(self, table_sql: str) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {table_sql} (pipeline text PRIMARY KEY, "
            "batch_id bigint NOT NULL, source_offset text, "
            "updated_at timestamptz NOT NULL DEFAULT now())"
        )

    def upsert_sql(self, target: Target, rows: int, keep: Collection[str] = ()) -> str:
        columns = [self.quote(c) for c in target.columns]
        one = "(" + ", ".join(["%s"] * len(columns)) + ")"
        keys = ", ".join(self.quote(k) for k in target.key)
        updates = [
            f"{c} = EXCLUDED.{c}"
            for c, n in zip(columns, target.columns, strict=True)
            if n not in target.key and n not in keep
        ]
        action = f"DO UPDATE SET {', '.join(updates)}" if updates else "DO NOTHING"
        return (
            f"INSERT INTO {self.table_sql(target.qualifier, target.name)} ({', '.join(columns)}) "
            f"VALUES {', '.join([one] * rows)} ON CONFLICT ({keys}) {action}"
        )

    def insert_offsets_row_sql(self, table_sql: str) -> str:
        return (
            f"INSERT INTO {table_sql} (pipeline, batch_id, updated_at) VALUES (%s, -1, now()) "
            "ON CONFLICT (pipeline) DO NOTHING"
        )

    def copy_csv(self, cur: Any, target: Target, blocks: Iterator[tuple[bytes, int]]) -> int | None:
        from psycopg import sql

        # composed, not formatted: COPY takes no parameters, so '%' must stay single
        statement = sql.SQL("COPY {}.{} ({}) FROM STDIN (FORMAT csv)").format(
            sql.Identifier(str(target.qualifier)),
            sql.Identifier(target.name),
            sql.SQL(", ").join(sql.Identifier(c) for c in target.columns),
        )
        count = 0
        with cur.copy(statement) as copy:
            for block, rows in blocks:
                copy.write(block)
                count += rows
        return count

    def owner(self, cur: Any, target: Target) -> str | None:
        comment = self._comment(cur, target)
        return comment.removeprefix(OWNER_MARK) if comment.startswith(OWNER_MARK) else None

    def mark_owner(self, cur: Any, target: Target, pipeline: str) -> bool:
        from psycopg import sql

        if not self.is_empty(cur, target):
            return False
        statement = sql.SQL("COMMENT ON TABLE {}.{} IS {}").format(
            sql.Identifier(str(target.qualifier)),
            sql.Identifier(target.name),
            sql.Literal(OWNER_MARK + pipeline),
        )
        cur.execute(statement)
        return True

    def unmark_owner(self, cur: Any, target: Target) -> None:
        if self.owner(cur, target) is None:
            return
        self.mark_target(cur, target)  # still a target, no longer one pipeline's only

    def _comment(self, cur: Any, target: Target) -> str:
        cur.execute(
            "SELECT obj_description(c.oid, 'pg_class') FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s",
            (target.qualifier, target.name),
        )
        row = cur.fetchone()
        return str(row[0]) if row and row[0] else ""

    def is_target(self, cur: Any, target: Target) -> bool:
        comment = self._comment(cur, target)
        return comment == TARGET_MARK or comment.startswith(OWNER_MARK)

    def mark_target(self, cur: Any, target: Target) -> None:
        from psycopg import sql

        statement = sql.SQL("COMMENT ON TABLE {}.{} IS {}").format(
            sql.Identifier(str(target.qualifier)),
            sql.Identifier(target.name),
            sql.Literal(TARGET_MARK),
        )
        cur.execute(statement)

    def comment_column(self, cur: Any, target: Target, name: str) -> None:
        from psycopg import sql

        statement = sql.SQL("COMMENT ON COLUMN {}.{}.{} IS {}").format(
            sql.Identifier(str(target.qualifier)),
            sql.Identifier(target.name),
            sql.Identifier(name),
            sql.Literal(target.comments.column(name)),
        )
        cur.execute(statement)

    def update_offsets_sql(self, table_sql: str) -> str:
        return (
            f"UPDATE {table_sql} SET batch_id = %s, source_offset = %s, updated_at = now() "
            "WHERE pipeline = %s"
        )

    def begin_consistent_read(self, conn: Any) -> None:
        import psycopg

        # psycopg opens the transaction itself at the next statement, with these settings.
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True

    def instant(self, micros: int | None) -> datetime | None:
        return None if micros is None else _epoch_micros(micros)


# ------------------------------------------------------------------------------------------


class MySqlTarget(TargetDialect):
    """MySQL 8 and MariaDB 10.5+ (InnoDB) through PyMySQL."""

    family = "mysql"
    #: InnoDB's index length limit (DYNAMIC rows, the default since MySQL 5.7/MariaDB 10.2).
    INDEX_BYTES = 3072
    #: Bytes reserved per fixed-width key column when sharing INDEX_BYTES.
    FIXED_KEY_BYTES = 16
    #: utf8mb4 needs up to 4 bytes per character; one VARCHAR key holds at most 768.
    MAX_KEY_CHARS = 768

    _TYPES: ClassVar[dict[str, str]] = {
        "BooleanType": "BOOLEAN",
        "ByteType": "TINYINT",
        "ShortType": "SMALLINT",
        "IntegerType": "INT",
        "LongType": "BIGINT",
        "FloatType": "FLOAT",
        "DoubleType": "DOUBLE",
        "DateType": "DATE",
        "TimestampNTZType": "DATETIME(6)",
        "TimestampType": "DATETIME(6)",
        "StringType": "LONGTEXT CHARACTER SET utf8mb4",
        "BinaryType": "LONGBLOB",
    }

    #: Sessions: UTC for DATETIMEs that hold instants, strict so nothing is truncated
    #: silently, NO_AUTO_VALUE_ON_ZERO so a 0 key in an AUTO_INCREMENT target stays 0.
    SESSION = (
        "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,"
        "NO_AUTO_VALUE_ON_ZERO,ERROR_FOR_DIVISION_BY_ZERO'"
    )
    TRANSACTIONAL_ENGINES = frozenset({"innodb", "rocksdb", "ndbcluster", "ndb"})
    loads_owned_only = False
    csv_form = MYSQL_CSV

    def __init__(self, config: JdbcSinkConfig) -> None:
        super().__init__(config)
        #: MariaDB's NO PAD binary collation keeps 'a' and 'a ' apart, as the source may.
        self.key_collation = "utf8mb4_nopad_bin"
        #: Set from the server's ``local_infile`` at each connection (MariaDB's default is
        #: ON, MySQL 8's OFF): LOAD DATA LOCAL bulk-loads snapshot rows only where allowed.
        self.copies_csv = False

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``").replace("%", "%%") + "`"

    def same_column(self, a: str, b: str) -> bool:
        return a.lower() == b.lower()  # MySQL column names are case-insensitive

    def connect(self) -> Any:
        import pymysql

        url = self.config.url
        try:
            conn = connection_class()(  # sends no file but the bulk load's own (own_files.py)
                host=url.host,
                port=url.port,
                database=url.database,
                user=self.config.username,
                password=self.config.password.reveal(),
                charset="utf8mb4",
                autocommit=False,
                connect_timeout=30,
                local_infile=True,  # announced to the server; allowed per statement (_load)
                **_pymysql_tls(self.config.tls),
            )
        except pymysql.Error as exc:
            raise self.connection_error(exc) from None
        files = _offer(conn, None)
        with conn.cursor() as cur:
            cur.execute(self.SESSION)
            cur.execute("SELECT VERSION(), @@local_infile")
            row = cur.fetchone()
        version = str(row[0] if row else "")
        self.copies_csv = files and bool(row and row[1])
        if "mariadb" not in version.lower():
            self.key_collation = "utf8mb4_0900_bin"  # MySQL 8's NO PAD binary collation
        return conn

    def lost_connection(self, exc: BaseException) -> bool:
        import pymysql

        if super().lost_connection(exc) or isinstance(exc, pymysql.InterfaceError):
            return True
        code = exc.args[0] if isinstance(exc, pymysql.OperationalError) and exc.args else None
        return code in _MYSQL_LOST

    def default_qualifier(self, cur: Any) -> str:
        cur.execute("SELECT DATABASE()")
        return str(cur.fetchone()[0])

    def ensure_qualifier(self, cur: Any, qualifier: str) -> None:
        cur.execute(
            "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (qualifier,)
        )
        if cur.fetchone() is None:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {self.quote(qualifier)}", ())

    def existing_columns(self, cur: Any, qualifier: str, name: str) -> list[str] | None:
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (qualifier, name),
        )
        names = [str(r[0]) for r in cur.fetchall()]
        return names or None

    def unique_keys(self, cur: Any, qualifier: str, name: str) -> list[set[str]]:
        cur.execute(
            "SELECT INDEX_NAME, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0",
            (qualifier, name),
        )
        keys: dict[str, set[str]] = {}
        prefixed: set[str] = set()
        for index, column, sub_part in cur.fetchall():
            keys.setdefault(str(index), set()).add(str(column).lower())
            if sub_part is not None:
                prefixed.add(str(index))  # a prefix index does not make whole values unique
        return [cols for index, cols in keys.items() if index not in prefixed]

    def check_engine(self, cur: Any, qualifier: str, name: str) -> None:
        cur.execute(
            "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s",
            (qualifier, name),
        )
        row = cur.fetchone()
        engine = str(row[0]) if row and row[0] is not None else "none (a view?)"
        if engine.lower() not in self.TRANSACTIONAL_ENGINES:
            raise SinkError(
                f"jdbc sink: target table {qualifier}.{name} uses engine {engine}, which has "
                "no transactions, so batches could be half applied; convert it with "
                f"ALTER TABLE ... ENGINE=InnoDB or drop it to let the sink create it"
            )

    def is_target(self, cur: Any, target: Target) -> bool:
        cur.execute(
            "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s",
            (target.qualifier, target.name),
        )
        row = cur.fetchone()
        return bool(row) and row[0] == TARGET_MARK

    def mark_target(self, cur: Any, target: Target) -> None:
        table = self.table_sql(target.qualifier, target.name)
        cur.execute(f"ALTER TABLE {table} COMMENT = %s", (TARGET_MARK,))

    def create_target(self, cur: Any, target: Target) -> None:
        """One CREATE TABLE with the columns' comments and the table's mark: MySQL commits
        each DDL statement at once, so comments or a mark set after it would be lost to a
        crash between them (the table taken back, or adopted while empty, without them)."""
        comments = [self._column_comment(target, f.name) for f in target.schema.fields]
        ddl = f"{self.create_table_sql(target)} COMMENT = %s"
        cur.execute(ddl, (*(c for c in comments if c is not None), TARGET_MARK))

    def add_column(self, cur: Any, target: Target, field: Any, column_type: str) -> None:
        """``ADD COLUMN`` with its comment in the one statement (MySQL has no COMMENT ON,
        and commits each DDL statement: a comment set after it could be lost)."""
        table_sql = self.table_sql(target.qualifier, target.name)
        comment = self._column_comment(target, field.name)
        sql = f"ALTER TABLE {table_sql} ADD COLUMN {self.quote(field.name)} {column_type}"
        if comment is None:
            cur.execute(sql, ())
        else:
            cur.execute(f"{sql} COMMENT %s", (comment,))

    def column_sql(self, target: Target, field: Any, shares: Mapping[str, int]) -> str:
        sql = super().column_sql(target, field, shares)
        return sql if target.comments.column(field.name) is None else f"{sql} COMMENT %s"

    #: MySQL's and MariaDB's longest column comment, in characters: a longer one fails the
    #: statement in strict mode, which would keep the target from ever being created.
    MAX_COLUMN_COMMENT = 1024

    def _column_comment(self, target: Target, column: str) -> str | None:
        """The column's comment as the server takes it: cut to :data:`MAX_COLUMN_COMMENT`
        characters (a PostgreSQL source's may be longer), saying so."""
        comment = target.comments.column(column)
        if comment is not None and len(comment) > self.MAX_COLUMN_COMMENT:
            log.warning(
                "jdbc sink: the comment of %s.%s is %d characters; MySQL and MariaDB keep %d: cut",
                target.name,
                column,
                len(comment),
                self.MAX_COLUMN_COMMENT,
            )
            return comment[: self.MAX_COLUMN_COMMENT]
        return comment

    def key_shares(self, target: Target) -> dict[str, int]:
        variable = [
            f.name
            for f in target.schema.fields
            if f.name in target.key
            and (_is(f.dataType, "StringType") or _is(f.dataType, "BinaryType"))
        ]
        if not variable:
            return {}
        fixed = len(target.key) - len(variable)
        share = (self.INDEX_BYTES - self.FIXED_KEY_BYTES * fixed) // len(variable)
        return {name: share for name in variable}

    def column_type(self, field: Any, key: bool, key_bytes: int) -> str:
        data_type = field.dataType
        if _is(data_type, "DecimalType"):
            return f"DECIMAL({data_type.precision},{data_type.scale})"
        if key and _is(data_type, "StringType"):
            chars = min(self.MAX_KEY_CHARS, key_bytes // 4)
            return f"VARCHAR({chars}) CHARACTER SET utf8mb4 COLLATE {self.key_collation}"
        if key and _is(data_type, "BinaryType"):
            return f"VARBINARY({key_bytes})"
        try:
            return self._TYPES[type(data_type).__name__]
        except KeyError:
            raise self.unsupported(field) from None

    def create_table_sql(self, target: Target) -> str:
        return super().create_table_sql(target) + " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"

    def widen_column_sql(self, table_sql: str, field: Any, column_type: str) -> str:
        return f"ALTER TABLE {table_sql} MODIFY {self.quote(field.name)} {column_type} NULL"

    def create_offsets_sql(self, table_sql: str) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {table_sql} (pipeline VARCHAR(255) CHARACTER SET "
            f"utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, batch_id BIGINT NOT NULL, "
            "source_offset LONGTEXT CHARACTER SET utf8mb4, updated_at DATETIME(6) NOT NULL) "
            "ENGINE=InnoDB"
        )

    def upsert_sql(self, target: Target, rows: int, keep: Collection[str] = ()) -> str:
        columns = [self.quote(c) for c in target.columns]
        one = "(" + ", ".join(["%s"] * len(columns)) + ")"
        non_keys = [
            c
            for c, n in zip(columns, target.columns, strict=True)
            if n not in target.key and n not in keep
        ]
        # With nothing to update (a key-only table, every other column kept) the clause
        # still needs one, or a duplicate key would fail: the key, to itself.
        updates = [f"{c} = VALUES({c})" for c in (non_keys or [self.quote(target.key[0])])]
        return (
            f"INSERT INTO {self.table_sql(target.qualifier, target.name)} ({', '.join(columns)}) "
            f"VALUES {', '.join([one] * rows)} ON DUPLICATE KEY UPDATE {', '.join(updates)}"
        )

    def copy_csv(self, cur: Any, target: Target, blocks: Iterator[tuple[bytes, int]]) -> int | None:
        """``LOAD DATA LOCAL INFILE ... IGNORE`` after a savepoint, from temporary files of
        up to :data:`LOAD_BYTES`: one is loaded (by a thread, the only user of the
        connection meanwhile) while the next fills, so the server inserts while Spark
        makes the next blocks. With LOCAL the server cannot stop the client's file, so it
        turns every refusal into a warning: a load that skipped a row (its key is in the
        target already) or warned about a value is rolled back to the savepoint, and None
        returned. The sink upserts those rows then, which updates the keys that were there
        and fails a value the target cannot take with the server's own error."""
        cur.execute("SAVEPOINT sparkcdc_load", ())
        with (
            tempfile.TemporaryDirectory(prefix="sparkcdc-load-") as folder,
            ThreadPoolExecutor(1, thread_name_prefix="sparkcdc-load") as loader,
        ):
            paths = [os.path.join(folder, f"{i}.csv") for i in range(2)]
            loading: Future[bool] | None = None  # the one load running
            count = filled = 0
            file = open(paths[0], "wb")  # noqa: SIM115 (swapped between two files)
            try:
                for block, rows in itertools.chain(blocks, [(b"", -1)]):
                    if rows >= 0:
                        file.write(block)
                        filled += rows
                        if file.tell() < LOAD_BYTES:
                            continue
                    file.close()
                    if loading is not None and not loading.result():
                        return None  # refused: rolled back to the savepoint
                    if filled:  # the other file is free again once its load is done
                        path = file.name
                        loading = loader.submit(self._load, cur, path, filled, target)
                        count, filled = count + filled, 0
                        file = open(paths[1 - paths.index(path)], "wb")  # noqa: SIM115
                if loading is not None and not loading.result():
                    return None
            finally:
                file.close()
                # a failure here leaves the load running: the connection is its until it ends
                if loading is not None:
                    wait([loading])
        cur.execute("RELEASE SAVEPOINT sparkcdc_load", ())
        return count

    def _load_sql(self, target: Target, path: str) -> str:
        """The statement loading ``path`` (``csv_blocks`` in :data:`MYSQL_CSV`) into
        ``target``: binary columns read as hex into variables and unhexed."""
        items: list[str] = []
        unhexed: list[str] = []
        for i, field in enumerate(target.schema.fields):
            column = self.quote(field.name)
            if _is(field.dataType, "BinaryType"):
                items.append(f"@c{i}")
                unhexed.append(f"{column} = UNHEX(@c{i})")
            else:
                items.append(column)
        file = "'" + path.replace("\\", "\\\\").replace("'", "''").replace("%", "%%") + "'"
        return (
            f"LOAD DATA LOCAL INFILE {file} IGNORE INTO TABLE "
            f"{self.table_sql(target.qualifier, target.name)} CHARACTER SET utf8mb4 "
            "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' "
            f"LINES TERMINATED BY '\\n' ({', '.join(items)})"
            + (f" SET {', '.join(unhexed)}" if unhexed else "")
        )

    def _load(self, cur: Any, path: str, rows: int, target: Target) -> bool:
        """Load the file at ``path`` (``rows`` rows); whether every row went in without a
        warning (if not, the savepoint is restored)."""
        import pymysql

        statement = self._load_sql(target, path)
        conn = cur.connection
        _offer(conn, path)  # only while this statement, which names our file, runs
        try:
            cur.execute(statement, ())
        except pymysql.err.MySQLError as exc:
            code = exc.args[0] if exc.args else None
            if code not in _LOAD_REFUSED:
                raise
            self.copies_csv = False  # local_infile was turned off since the connection began
            cur.execute("ROLLBACK TO SAVEPOINT sparkcdc_load", ())
            log.warning(
                "jdbc sink: %s refused LOAD DATA LOCAL (%s); its rows are upserted instead",
                target,
                exc.args[1] if len(exc.args) > 1 else code,
            )
            return False
        finally:
            _offer(conn, None)
        if cur.rowcount == rows and not cur.warning_count:
            return True
        loaded, warnings = cur.rowcount, cur.warning_count
        cur.execute("SHOW WARNINGS LIMIT 3", ())
        found = "; ".join(f"{code}: {text}" for _, code, text in cur.fetchall())
        cur.execute("ROLLBACK TO SAVEPOINT sparkcdc_load", ())
        log.warning(
            "jdbc sink: bulk load into %s took %d of %d rows with %d warnings (%s); the "
            "batch's snapshot rows are upserted instead",
            target,
            loaded,
            rows,
            warnings,
            found,
        )
        return False

    def insert_offsets_row_sql(self, table_sql: str) -> str:
        # INSERT IGNORE would also hide real errors; a no-op update does not.
        return (
            f"INSERT INTO {table_sql} (pipeline, batch_id, updated_at) "
            "VALUES (%s, -1, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE pipeline = pipeline"
        )

    def update_offsets_sql(self, table_sql: str) -> str:
        return (
            f"UPDATE {table_sql} SET batch_id = %s, source_offset = %s, "
            "updated_at = UTC_TIMESTAMP(6) WHERE pipeline = %s"
        )

    def begin_consistent_read(self, conn: Any) -> None:
        with conn.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")

    def instant(self, micros: int | None) -> datetime | None:
        # DATETIME(6) holding UTC wall-clock time; the session zone is UTC too.
        return None if micros is None else _epoch_micros(micros).replace(tzinfo=None)

    def select_for_read(self, field: Any) -> str:
        name = self.quote(field.name)
        if _is(field.dataType, "FloatType"):
            # The text protocol prints FLOAT with 6 digits; DOUBLE prints it exactly.
            return f"CAST({name} AS DOUBLE) AS {name}"
        return name

    def from_target(self, field: Any) -> Converter | None:
        if _is(field.dataType, "BooleanType"):
            return _int_to_bool
        if _is(field.dataType, "TimestampType"):
            return _utc
        return super().from_target(field)


def _offer(conn: Any, path: str | None) -> bool:
    """Let the connection send ``path`` when the server asks for it, and no other file
    (None: none); whether it could be set. PyMySQL sends whatever file the server names,
    so the sink's connections check the name (own_files.py), and offer a file only while
    the LOAD DATA naming it runs (the connection announced LOCAL files when it opened)."""
    if not hasattr(conn, "sendable"):
        return False
    conn.sendable = path
    return True


def _int_to_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


def dialect_for(config: JdbcSinkConfig) -> TargetDialect:
    """The dialect of the config's URL scheme."""
    return PostgresTarget(config) if config.family == "postgresql" else MySqlTarget(config)
