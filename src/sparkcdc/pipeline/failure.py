"""What a user reads when the pipeline's query fails.

Spark reports a failure of our code in a Python worker (planning, reads) or in the
foreachBatch callback as its own error wrapping a Python traceback (and often a JVM
stack trace): kilobytes in which the one line that says what to do, our error's message,
is buried. The runner shows that message and logs the whole text."""

from __future__ import annotations

import re

#: A traceback's last line for one of our errors: ``sparkcdc.core.errors.SchemaError: ...``.
_OURS = re.compile(r"^sparkcdc\.[\w.]+?\.(\w+): (.*)$", re.M)
#: A Python traceback's last line for any error (a driver's, e.g. a lost connection that
#: outlasted ``connect.max-retries``; psycopg names its errors by condition, in
#: ``psycopg.errors``: ``AdminShutdown``); not the JVM's or py4j's wrappers.
_PYTHON = re.compile(
    r"^(?!org\.apache|java\.|py4j\.)(?:[\w.]*(?:Error|Exception)|[\w.]+\.errors?\.\w+): .*$",
    re.M,
)
#: A JVM exception's root cause (the last ``Caused by:`` of a stack trace): a sink's own
#: failure in the JVM (Kafka's producer giving up, a Delta conflict) under the wrappers of
#: the Python callback that called it.
_CAUSE = re.compile(r"^Caused by: (.*)$", re.M)
#: Lines that end a message inside the wrapping text.
_NOT_MESSAGE = re.compile(r"^(\s|Traceback|JVM stacktrace|\tat |$)")


#: What to do about failures that are the machine's, not the pipeline's.
_HINTS = (
    (
        "No space left on device",
        "a disk the pipeline writes to (its checkpoint, its target, Spark's local folder) "
        "is full: free space and run again, the run resumes from its checkpoint",
    ),
    (
        "not present in metadata after",
        "Kafka's producer did not reach the brokers within its timeouts (max.block.ms, "
        "delivery.timeout.ms), or cannot create the topic: check the brokers and run "
        "again, the run resumes from its checkpoint",
    ),
)


def failure_text(error: str) -> str:
    """The message of the last of our errors that ``error`` (a failed query's text)
    wraps (the cause: tracebacks end with it), with its continuation lines; else the last
    Python error line in it; else the JVM's root cause; else the text's first line. A
    failure of the machine (a full disk) gets what to do about it."""
    text = _message(error)
    for symptom, hint in _HINTS:
        if symptom in text:
            return f"{text} ({hint})"
    return text


def _message(error: str) -> str:
    found = list(_OURS.finditer(error))
    if not found:
        python = _PYTHON.findall(error)
        if python:
            return str(python[-1])
        causes = _CAUSE.findall(error)
        if causes:
            return str(causes[-1]).strip()
        lines = error.strip().splitlines()
        return lines[0] if lines else error
    last = found[-1]
    message = [last.group(2)]
    for line in error[last.end() :].splitlines()[1:]:
        if _NOT_MESSAGE.match(line) or _OURS.match(line):
            break
        message.append(line)
    return "\n".join(message).strip()
