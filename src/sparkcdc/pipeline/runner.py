"""``sparkcdc run``: one Spark streaming query from the source to the sink.

The source stream (the connector's format, e.g. ``format("mysql-cdc")``) captures every
table of the pipeline in one log read. Each micro-batch goes through ``foreachBatch``: it
is cached once, split by table (several tables arrive in the envelope format and are
unpacked to typed columns), counted in one job, and handed to the sink as a
:class:`WritePlan`. Spark's checkpoint is the only state: stopping (Ctrl-C) or killing the
process and running again resumes.
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_TIMESTAMP
from sparkcdc.core.errors import PIPELINE_FILE, RESTART_FOR_SCHEMA, SparkCdcError
from sparkcdc.core.folders import ensure_writable
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import TableEvent
from sparkcdc.pipeline.applier import Captured, TableEventApplier
from sparkcdc.pipeline.batch_report import (
    COUNTED,
    OFFSETS,
    PLANNED,
    RECORDED,
    RELEASED,
    STREAMING,
    WRITTEN,
    BatchReport,
    table_states,
)
from sparkcdc.pipeline.batch_split import BatchSplit, Split
from sparkcdc.pipeline.checkpoint import BatchOffsets, ensure_query_id, private_folder, query_id
from sparkcdc.pipeline.definition import PipelineDefinition
from sparkcdc.pipeline.failure import failure_text
from sparkcdc.pipeline.metrics import PipelineMetrics
from sparkcdc.pipeline.one_pass import chunks_of_one_table
from sparkcdc.pipeline.plan import plan
from sparkcdc.pipeline.query_status import between_triggers
from sparkcdc.pipeline.run_state import RunState, load_run_state, save_run_state
from sparkcdc.pipeline.source_probe import SourceProbe
from sparkcdc.pipeline.tables import captured_tables
from sparkcdc.pipeline.targets import Target
from sparkcdc.pipeline.write_plan import source_ids, write_plan
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.write_plan import WritePlan
from sparkcdc.snapshot.options import ENVELOPE
from sparkcdc.snapshot.schema_change import ColumnMoves
from sparkcdc.spark.read_counters import source_retries

log = logging.getLogger(__name__)


class PipelineFailedError(SparkCdcError):
    """The streaming query stopped with an error (the checkpoint stays resumable)."""


#: The name of the runner's observed metrics in ``StreamingQueryProgress.observedMetrics``.
OBSERVED = "sparkcdc"


@dataclass
class PipelineRun:
    """A running (or finished) pipeline: its tables, sink and Spark query."""

    definition: PipelineDefinition
    spark: Any
    #: The captured tables (what the source reads, and what metrics count by).
    tables: list[SinkTable]
    #: What the sink writes: each captured table's own target, or the targets that
    #: transform and route rules make of them.
    targets: list[Target]
    sink: Sink
    probe: SourceProbe
    metrics: PipelineMetrics
    on_batch: Callable[[BatchReport], None] | None = None
    query: Any = None
    batches: list[BatchReport] = field(default_factory=list)
    _pipeline_id: str | None = None
    _writing: threading.Event = field(default_factory=threading.Event)  #: a sink write runs
    _written: int | None = None  #: the last batch the sink wrote (Spark commits it next)
    _restart_lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: bool = False
    _pausing: bool = False  #: the pause file was made for a stop: no restart for schema
    _watcher: threading.Thread | None = None
    #: One table read in the envelope schema: its columns at the checkpoint are not its
    #: columns now, which a typed query (schema fixed at its start) cannot carry; the
    #: others were dropped while the query ran in the envelope; or its table options are
    #: a pattern watched for created tables (``scan.newly-added-table.enabled``).
    force_envelope: bool = False
    #: The last batch's offsets (its end is the next batch's start).
    _offsets: BatchOffsets | None = None
    #: Where the batches' table events reach the sink.
    applier: TableEventApplier = field(init=False)

    def __post_init__(self) -> None:
        self.applier = TableEventApplier(
            self.spark, self.sink, self.definition, self.probe, self.metrics
        )

    @property
    def envelope(self) -> bool:
        return len(self.tables) > 1 or self.force_envelope

    def start(self) -> None:
        self._stopping = self._pausing = False
        # a stop that could not finish (SIGKILL) left it; one made by hand while the run
        # goes on stays through the query's restarts for a schema change
        self.definition.pause_file.unlink(missing_ok=True)
        self._start_query()
        if not self.envelope and (self._watcher is None or not self._watcher.is_alive()):
            self._watcher = threading.Thread(
                target=self._watch, name="sparkcdc-restarts", daemon=True
            )
            self._watcher.start()

    def _start_query(self) -> None:
        settings = self.definition.settings
        private_folder(settings.checkpoint)
        options = self.definition.stream_options()
        if self.force_envelope:
            options[ENVELOPE.name] = "true"
        stream = (
            self.spark.readStream.format(self.definition.connector.format).options(**options).load()
        )
        writer = (
            _observed(stream)
            .writeStream.foreachBatch(self._write_batch)
            .option("checkpointLocation", str(settings.checkpoint))
            .queryName(_query_name(settings.name))
        )
        if settings.trigger_seconds is None:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(
                processingTime=f"{int(settings.trigger_seconds * 1000)} milliseconds"
            )
        self.query = writer.start()

    @property
    def active(self) -> bool:
        """The query runs (or is being restarted for a schema change)."""
        return bool(self.query.isActive) or self._restart_for_schema()

    def _watch(self, poll_seconds: float = 0.2) -> None:
        """A one-table stream stops at a change of its table's columns (a Spark query's
        schema is fixed); restart it at once, with the new columns."""
        query = self.query
        while not self._stopping:
            if not query.isActive:
                if self._restart_for_schema():
                    query = self.query
                    continue
                return
            time.sleep(poll_seconds)

    def _restart_for_schema(self) -> bool:
        """If the query stopped for a schema change, start it again (once, whoever asks
        first); True when the query runs again."""
        with self._restart_lock:
            if self._stopping or self._pausing:  # the next run starts with the new columns
                return False
            if self.query.isActive:
                return True
            error = self.query.exception()
            if error is None or RESTART_FOR_SCHEMA not in str(error):
                return False
            (table,) = self.tables
            log.info("restarting the query with the new columns of %s", table.source)
            now = captured_tables(self.probe.handle)
            if [t.schema for t in now] != [table.schema]:  # it changed again since
                log.info("%s changed again since: reading it in the envelope", table.source)
                self.force_envelope = True
            self._start_query()
            return True

    def wait(
        self,
        stop: threading.Event | None = None,
        poll_seconds: float = 0.5,
        hurry: threading.Event | None = None,
    ) -> None:
        """Block until the query ends (available-now), ``stop`` is set, or Ctrl-C.

        A stop lets the running micro-batch finish first (its sink write is not cut off, and
        Spark logs no interrupted tasks), unless ``hurry`` is set too."""
        try:
            while True:
                try:
                    while not self.query.awaitTermination(poll_seconds):
                        if stop is not None and stop.is_set():
                            self._between_batches(hurry)
                            return
                except Exception:
                    if not self._restart_for_schema():
                        break
                    continue
                if not self._restart_for_schema():
                    break
        except KeyboardInterrupt:
            log.info("interrupted: stopping the pipeline (run it again to resume)")
        finally:
            self.stop()
        error = self.query.exception()
        if error is not None and not (self._pausing and RESTART_FOR_SCHEMA in str(error)):
            text = failure_text(str(error))
            if PIPELINE_FILE in text:  # the way out names a command on this pipeline's file
                text = text.replace(PIPELINE_FILE, str(self.definition.path))
            else:
                text += "\nFix the cause and run it again: it resumes from its checkpoint"
            raise PipelineFailedError(
                f"pipeline '{self.definition.settings.name}' failed: {text} (Spark's log has "
                "the whole error)"
            )

    def _between_batches(
        self, hurry: threading.Event | None, grace: float = 60.0, poll_seconds: float = 0.05
    ) -> None:
        """Make the pause file, then wait, at most ``grace`` seconds (or until ``hurry`` is
        set), until the query is idle: no batch planned, read or written, and the last one
        written committed. The source plans no batch while the file exists, so stopping
        then interrupts only the wait for the next trigger: never a sink write, nor the
        commit after it, nor the planning of a batch (a batch cut off is replayed on
        restart, and the interruption prints Spark's, py4j's or Hadoop's errors)."""
        with self._restart_lock:  # a query restarted for a schema change would not pause
            self._pausing = True
        self.definition.pause_file.touch()
        deadline = time.monotonic() + grace
        while self.query.isActive and not (self._idle() and self._trigger_not_due()):
            if time.monotonic() > deadline or (hurry is not None and hurry.is_set()):
                return
            time.sleep(poll_seconds)

    def _idle(self) -> bool:
        """No batch runs: none is written (nor waits for Spark's commit), and Spark is
        between triggers (a trigger planned after the pause file plans nothing), its
        sources initialized (a run stopped right after it started waits for that)."""
        if self._writing.is_set() or not self._committed():
            return False
        return between_triggers(self.query.status)

    def _trigger_not_due(self, margin: float = 0.1) -> bool:
        """Spark starts a trigger at every multiple of the interval since the epoch; one
        planned while the stop is on its way is cut in its call to the source (it plans
        nothing, being paused, but the cut call may print the Python worker's traceback),
        so stop only when the next one is more than ``margin`` seconds away. Intervals
        below twice that leave no such moment: the stop is taken as it comes."""
        interval = self.definition.settings.trigger_seconds
        if interval is None or interval < 2 * margin:
            return True
        return interval - time.time() % interval > margin

    def _committed(self) -> bool:
        """Whether Spark's commit log has the last batch the sink wrote."""
        if self._written is None:
            return True
        return (self.definition.settings.checkpoint / "commits" / str(self._written)).exists()

    def stop(self) -> None:
        self._stopping = True
        if self.query is not None and self.query.isActive:
            # an interrupted call back into Python logs its traceback through py4j
            logging.getLogger("py4j").setLevel(logging.CRITICAL)
            self.query.stop()
        self.definition.pause_file.unlink(missing_ok=True)
        self.sink.close()
        self.probe.close()

    # -- one micro-batch ----------------------------------------------------------------
    def _write_batch(self, frame: Any, batch_id: int) -> None:
        self._writing.set()
        try:
            self._write(frame, batch_id)
            self._written = batch_id
        except Exception as exc:
            if not self._stopping:
                raise
            # the stop interrupted the write: the batch fails (not committed, replayed on
            # restart), with a short error Spark takes for an interruption by the stop
            log.debug("batch %d interrupted by the stop: %s", batch_id, exc)
            raise StoppedDuringBatch() from None
        finally:
            self._writing.clear()

    def _write(self, frame: Any, batch_id: int) -> None:
        """One batch: its table events applied around the split (pipeline/applier.py), its
        rows handed to the sink (pipeline/write_plan.py), its counts recorded."""
        started = time.time()
        steps: dict[str, float] = {}  # when each step ended (BatchReport.steps)
        checkpoint = self.definition.settings.checkpoint
        if self._pipeline_id is None:  # Spark wrote the checkpoint's metadata at start
            self._pipeline_id = f"{self.definition.settings.name}:{query_id(checkpoint)}"
        offsets = BatchOffsets.read(checkpoint, batch_id, self._offsets)
        alone = self._read_once(frame, offsets)
        if alone is None:
            frame = frame.persist()  # lazy: the count below fills it
        try:
            events = offsets.events({t.source for t in self.tables})
            self._captured = self.applier.before_split(events, self._captured, self.envelope)
            version = None if offsets.text is None else self.probe.position(offsets.text).version
            steps[OFFSETS] = time.time()
            split = self._splitter().of(frame, batch_id, version, alone)
            steps[COUNTED] = time.time()
            if alone is not None:
                split.uncounted = frozenset(t.table.source for t in self._into(alone))
            upsert = getattr(self.definition.source_config, "upsert", False)
            batch = write_plan(
                self._pipeline_id,
                batch_id,
                offsets.text,
                version,
                split,
                self.targets,
                self.definition.namespace,
                inserts_are_new=not upsert,
                unchanged=upsert,
            )
            self._before_write(events, batch)
            steps[PLANNED] = time.time()
            self.sink.write(batch)
            split.written(batch.read_frames)
            steps[WRITTEN] = time.time()
        finally:
            frame.unpersist()
        steps[RELEASED] = time.time()
        self._offsets = offsets
        self._record(batch_id, split, offsets.text, started, steps)

    @property
    def _captured(self) -> Captured:
        return Captured(self.tables, self.targets)

    @_captured.setter
    def _captured(self, captured: Captured) -> None:
        self.tables, self.targets = captured.tables, captured.targets

    def _splitter(self) -> BatchSplit:
        return BatchSplit(self.tables, self.envelope, self.definition.path)

    def _before_write(self, events: Sequence[TableEvent], batch: WritePlan) -> None:
        """The batch's truncates, drops and lost logs; a table whose target was dropped
        leaves the run (created again, it is a new table with a new target)."""
        if not events:
            return
        envelope = self.envelope
        self._captured, gone = self.applier.before_write(events, self._captured, batch)
        if gone:  # the running query's rows stay in the envelope when one table is left
            self.force_envelope = envelope

    def _record(
        self,
        batch_id: int,
        split: Split,
        offset: str | None,
        started: float,
        steps: dict[str, float],
    ) -> None:
        tally = split.tally
        report = BatchReport(
            batch_id,
            tally.rows,
            offset,
            counts=tally.counts,
            newest_commit=tally.newest_commit,
            started=started,
            fetched=split.fetched,
            written=time.time(),
            steps=steps,
        )
        self.batches.append(report)
        self.metrics.record(report)
        save_run_state(self.definition.settings.checkpoint, self.metrics.state)
        steps[RECORDED] = time.time()
        if self.on_batch is not None:
            self.on_batch(report)

    def _into(self, table: TableId) -> list[Target]:
        return [t for t in self.targets if table in source_ids(t)]

    def _read_once(self, frame: Any, offsets: BatchOffsets) -> TableId | None:
        """The table whose snapshot rows are the whole batch, when its target appends them
        in one write: then the batch is neither cached nor counted before the write
        (pipeline/one_pass.py). None: cache and count as usual."""
        end = offsets.end
        if end is None:
            return None
        mode = getattr(self.definition.source_config, "startup_mode", None)
        # only the checkpoint's first batch starts from the initial offset (a later one
        # whose previous offset cannot be read is not known to start anywhere)
        from_scratch = offsets.batch_id == 0 and mode in ("initial", "snapshot")
        alone = chunks_of_one_table(offsets.start, end, from_scratch)
        if alone is None or alone not in {t.source for t in self.tables}:
            return None
        if not self.envelope and not all(c in frame.columns for c in self.tables[0].columns):
            return None  # the query's columns are not the table's (a schema change)
        into = self._into(alone)
        pipeline = self._pipeline_id or ""
        if not into or not all(
            self.sink.writes_snapshot_once(self.spark, t.table, pipeline) for t in into
        ):
            return None
        return alone


def _observed(stream: Any) -> Any:
    """The stream with the metrics Spark's query progress shows under ``observedMetrics``
    (a Python data source cannot declare custom metrics): rows and changes by kind, and
    the newest commit time (snapshot rows included: the stream does not know which rows
    are snapshot rows, the runner's own count does)."""
    from pyspark.sql import functions as F

    kind = F.col(CHANGE_TYPE)
    return stream.observe(
        OBSERVED,
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(kind == "insert", 1)).alias("inserts"),
        F.count(F.when(kind.isin("update", "update_postimage"), 1)).alias("updates"),
        F.count(F.when(kind == "delete", 1)).alias("deletes"),
        F.max(COMMIT_TIMESTAMP).alias("newest_commit_timestamp"),
    )


class StoppedDuringBatch(Exception):
    """A batch cut off by the pipeline's stop. Spark's stream thread checks a failed
    batch's error text against a regular expression (``StreamExecution.PROXY_ERROR``)
    whose ``(.|\r\n|\r|\n)*`` recurses once per character: the whole text of an
    interrupted Py4J call, Java stack included, overflows the thread's stack (a
    ``StackOverflowError`` printed at every such stop). This short text matches it, so
    Spark takes the failure for the stop's interruption and stops the query quietly."""

    def __str__(self) -> str:
        return (
            "py4j.protocol.Py4JJavaError: An error occurred while calling the sink.\n"
            ": java.lang.InterruptedException: the pipeline stops"
        )


def prepare(
    definition: PipelineDefinition,
    spark: Any | None = None,
    on_batch: Callable[[BatchReport], None] | None = None,
    jvm_log: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> PipelineRun:
    """Validate the source server, discover tables, open the sink (creating targets).
    Without ``spark``, a local session starts (its JVM's output to ``jvm_log`` if given).
    ``progress`` hears each step as it begins."""
    say = progress or (lambda _: None)
    ensure_writable(definition.settings.checkpoint, "pipeline.checkpoint")
    identity = f"{definition.settings.name}:{ensure_query_id(definition.settings.checkpoint)}"

    def session() -> Any:
        if spark is not None:
            return spark
        settings = definition.settings
        say(
            f"starting Spark (local[{settings.parallelism}]; the JVM takes a while to start)"
            + (f"; its log: {jvm_log}" if jvm_log is not None else "")
        )
        return session_for(definition, jvm_log)

    planned = plan(definition, session, identity, progress=say)
    spark, sink, targets = planned.spark, planned.sink, planned.targets
    finish_evolutions(spark, sink, targets, planned.state, definition.settings.checkpoint)
    plural = "" if len(targets) == 1 else "s"
    say(f"sink: opening {len(targets)} target{plural} ({definition.sink_type})")
    sink.open(spark, [t.table for t in targets])
    tables = planned.tables
    metrics = pipeline_metrics(definition, [t.source for t in tables], planned.probe, spark)
    sink.on_retry = metrics.sink_retried
    run = PipelineRun(definition, spark, tables, targets, sink, planned.probe, metrics, on_batch)
    sink.stopping = lambda: run._stopping
    # a pattern watched for created tables may grow: its one table at the start is read in
    # the envelope, as the source's catalog decides too (snapshot/catalog.py)
    config = definition.source_config
    may_grow = config.newly_added_tables and config.tables.may_grow
    run.force_envelope = (len(tables) == 1 and tables != planned.now) or may_grow
    return run


def finish_evolutions(
    spark: Any, sink: Sink, targets: list[Target], state: RunState, checkpoint: Path
) -> None:
    """Bring every target a schema change reached to the schema the run state has for it:
    an evolution a crash cut short is finished, with the renames and drops of a change
    written ahead (``RunState.pending``). The appliers compare with the target as it is,
    so what the sink applied before the crash is not applied again. A change written
    ahead that the sink refuses now is taken back out of the state (the run stops; the
    next one replays the batch that carries it and follows it per the behaviour)."""
    for evolved in targets:
        target = evolved.table.source
        if target not in state.targets:
            continue
        pending = state.pending.get(target)
        moves = ColumnMoves.from_json(pending.get("moves") or {}) if pending else None
        try:
            sink.evolve(spark, evolved.table, moves=moves)
        except Exception as exc:
            if pending is None:
                raise
            before = pending.get("before")
            if before is None:
                state.targets.pop(target, None)
            else:
                state.targets[target] = before
            del state.pending[target]
            save_run_state(checkpoint, state)
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise SparkCdcError(
                f"a schema change of the target {target}, applied when the run before this "
                f"one was cut off, could not be finished ({reason}). Run the pipeline "
                "again: the batch that carries the change is replayed and the change "
                "followed per 'schema.change.behavior'"
            ) from exc
    if state.pending:
        state.pending.clear()
        save_run_state(checkpoint, state)


def pipeline_metrics(
    definition: PipelineDefinition, tables: list[TableId], probe: SourceProbe, spark: Any
) -> PipelineMetrics:
    """The run's metrics, starting from the totals in the checkpoint; the row estimates
    are asked for only for tables whose snapshot is not done. The source's retries are
    those of ``spark``'s tasks from now on."""
    state = load_run_state(definition.settings.checkpoint)
    states = table_states(state.source_offset)
    pending = [t for t in tables if states.get(t) != STREAMING]
    return PipelineMetrics(
        definition.settings.name,
        tables,
        state,
        probe.estimated_rows(pending) if pending else {},
        describe_position=probe.describe,
        log_head=probe.log_head,
        source_retries=source_retries(spark),
    )


def pipeline_id(definition: PipelineDefinition) -> str | None:
    """``name:query-id`` of the pipeline's checkpoint (what sinks key exactly-once on), or
    None before the first run created the checkpoint."""
    try:
        return f"{definition.settings.name}:{query_id(definition.settings.checkpoint)}"
    except (OSError, ValueError, KeyError):
        return None


def session_for(definition: PipelineDefinition, jvm_log: Path | None = None) -> Any:
    """The pipeline's local SparkSession. Its JVM starts with SIGTERM ignored, as PySpark
    starts it with SIGINT ignored: a scheduler's SIGTERM to the process group must reach
    only this process, which stops the stream cleanly (see ``sigterm_shield``). With
    ``jvm_log`` the JVM writes its output there, not to the terminal."""
    from sparkcdc.spark.session import local_session
    from sparkcdc.spark.sigterm_shield import sigterm_shield

    settings = definition.settings
    conf = session_conf(settings.spark_conf, settings.checkpoint)
    with sigterm_shield():
        return local_session(
            settings.name,
            master=f"local[{settings.parallelism}]",
            conf=conf,
            jvm_log=jvm_log,
        )


def session_conf(spark_conf: Mapping[str, str], checkpoint: Path) -> dict[str, str]:
    """The pipeline's ``spark-conf`` with Spark's folders beside the checkpoint where it
    does not name them: nothing of Spark's lands in the working directory."""
    conf = dict(spark_conf)
    # Spark makes its warehouse folder in the working directory unless told otherwise: a
    # stray spark-warehouse/ wherever sparkcdc ran. It goes beside the checkpoint instead.
    conf.setdefault(WAREHOUSE_KEY, str(checkpoint.with_name(checkpoint.name + ".warehouse")))
    # a Hive session catalog's embedded metastore (Derby: metastore_db/, derby.log) would
    # go to the working directory too; beside the checkpoint it persists with the pipeline
    # (a hive-site.xml's own metastore is not Derby's and is left alone)
    if conf.get(CATALOG_IMPLEMENTATION_KEY, "").strip().lower() == "hive":
        derby_home = checkpoint.with_name(checkpoint.name + ".metastore")
        given = conf.get(DRIVER_JAVA_OPTIONS_KEY, "")
        if "-Dderby.system.home=" not in given:
            home = shlex.quote(f"-Dderby.system.home={derby_home}")  # Spark splits as a shell
            conf[DRIVER_JAVA_OPTIONS_KEY] = f"{home} {given}".strip()
    return conf


#: Spark's folder of managed catalog tables (by default ``./spark-warehouse``).
WAREHOUSE_KEY = "spark.sql.warehouse.dir"
#: ``hive``: Spark's session catalog is a Hive metastore (by default in-memory).
CATALOG_IMPLEMENTATION_KEY = "spark.sql.catalogImplementation"
DRIVER_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"


def run_pipeline(
    definition: PipelineDefinition,
    spark: Any | None = None,
    stop: threading.Event | None = None,
    on_batch: Callable[[BatchReport], None] | None = None,
) -> PipelineRun:
    """Run until the query ends (available-now), ``stop`` is set, or Ctrl-C."""
    run = prepare(definition, spark, on_batch)
    run.start()
    run.wait(stop)
    return run


def _query_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
