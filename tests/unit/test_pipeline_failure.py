"""The line a user reads when the pipeline's query fails (pipeline/failure.py)."""

from __future__ import annotations

from sparkcdc.pipeline.failure import failure_text

PLANNING = """\
[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source \
perform latestOffset: Traceback (most recent call last):
  File "/x/pyspark/sql/streaming/python_streaming_source_runner.py", line 281, in main
  File "/x/src/sparkcdc/connectors/mysql/server/connection.py", line 118, in open_with_retries
    raise SourceConfigurationError(
sparkcdc.core.errors.SourceConfigurationError: cannot connect to 127.0.0.1:45679 after 4 \
attempts: Can't connect. Check 'hostname' and 'port'
 SQLSTATE: 38000
=== Streaming Query ===
Identifier: p [id = ce7505cb]
Current Committed Offsets: {"log": {"file": "binlog.000001"}}
"""

WRITE = """\
An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/x/py4j/clientserver.py", line 644, in _call_proxy
py4j.protocol.Py4JJavaError: An error occurred while calling o123.save.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 failed: \
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/x/src/sparkcdc/snapshot/driver.py", line 9, in read
sparkcdc.core.errors.SchemaError: TRUNCATE of shop.t inside a read's range
which cannot be passed.
Start the stream again

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException
JVM stacktrace:
org.apache.spark.SparkException: ...
"""


def test_our_errors_message_is_found_in_the_wrapping_text() -> None:
    assert failure_text(PLANNING) == (
        "cannot connect to 127.0.0.1:45679 after 4 attempts: Can't connect. Check 'hostname' "
        "and 'port'"
    )
    assert failure_text(WRITE) == (
        "TRUNCATE of shop.t inside a read's range\nwhich cannot be passed.\nStart the stream again"
    )


def test_a_drivers_error_is_found_when_none_of_ours_is() -> None:
    text = WRITE.replace(
        "sparkcdc.core.errors.SchemaError: TRUNCATE of shop.t inside a read's range",
        'pymysql.err.OperationalError: (2003, "Can\'t connect to MySQL server")',
    )
    assert failure_text(text) == (
        'pymysql.err.OperationalError: (2003, "Can\'t connect to MySQL server")'
    )

    admin = "psycopg.errors.AdminShutdown: terminating connection due to administrator command"
    text = WRITE.replace(
        "sparkcdc.core.errors.SchemaError: TRUNCATE of shop.t inside a read's range", admin
    )
    assert failure_text(text) == admin


def test_other_errors_keep_their_first_line() -> None:
    assert failure_text("java.lang.OutOfMemoryError: Java heap space\n\tat x.y") == (
        "java.lang.OutOfMemoryError: Java heap space"
    )
    assert failure_text("") == ""


def test_a_jvm_root_cause_is_found_under_the_python_callbacks_wrappers() -> None:
    """A sink's failure inside the JVM (here Kafka's producer giving up on a broker that is
    down) reaches the query as the foreachBatch callback's Py4JJavaError: the root cause,
    not the wrapper's first line, is what the user reads."""
    cause = (
        "org.apache.kafka.common.errors.TimeoutException: Topic t.audit not present in "
        "metadata after 6000 ms."
    )
    text = (
        "An exception was raised by the Python Proxy. Return Message: Traceback (most recent "
        'call last):\n  File "/x/py4j/clientserver.py", line 644, in _call_proxy\n'
        "py4j.protocol.Py4JJavaError: An error occurred while calling o812.save.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed\n"
        "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages\n"
        "Caused by: org.apache.spark.SparkException: Writing job aborted\n"
        "\tat org.apache.spark.sql.kafka010.KafkaWriteTask.checkForErrors\n"
        f"Caused by: {cause}\n"
    )
    said = failure_text(text)
    assert said.startswith(f"{cause} (Kafka's producer did not reach the brokers")
    assert said.endswith("the run resumes from its checkpoint)")


def test_a_full_disk_says_what_to_do() -> None:
    """Spark's checkpoint (or the target) cannot be written: the root cause is the JVM's
    IOException, and the user reads that a disk is full and that the run resumes."""
    text = (
        "[STREAM_FAILED] Query [id = 1] terminated with exception: No space left on device\n"
        "\tat org.apache.spark.sql.execution.streaming.checkpointing.HDFSMetadataLog.write\n"
        "Caused by: java.io.IOException: No space left on device\n"
        "\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)\n"
    )
    said = failure_text(text)
    assert said.startswith("java.io.IOException: No space left on device (a disk")
    assert "free space and run again" in said
