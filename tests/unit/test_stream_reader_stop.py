"""The stream reader's ``stop`` in Spark's streaming runner (spark/source.py): when the JVM
hung up (PySpark's ``read_int`` met the end of the socket) the process ends quietly, exit 0,
instead of writing the error to the closed socket and printing a traceback into Spark's
log; an ``EOFError`` of anything else is left to the runner to report."""

from __future__ import annotations

import subprocess
import sys
import textwrap

RUNNER = """
import io
from pyspark.serializers import read_int
from sparkcdc.spark.source import CdcStreamReader

class Source:  # the reader's collaborator: only its close() is called
    def close(self):
        print("closed", flush=True)

reader = CdcStreamReader(Source())
try:
    try:
        {failing}
    finally:
        reader.stop()
except EOFError:
    print("reported", flush=True)
"""


def runner(failing: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(RUNNER).replace("{failing}", failing)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_the_jvm_hanging_up_ends_the_runner_quietly() -> None:
    done = runner("read_int(io.BytesIO(b''))")
    assert (done.returncode, done.stdout, done.stderr) == (0, "closed\n", "")


def test_an_eof_error_of_our_own_is_still_reported() -> None:
    done = runner("raise EOFError('a server closed the connection')")
    assert (done.returncode, done.stdout) == (0, "closed\nreported\n")
