"""Table names (and other outside text) with ESC and other control characters reach logs
and the console escaped, never raw (#63): ``ESC [ 2 J`` in a table name cleared the
terminal of whoever ran ``sparkcdc status``, a newline forged log lines."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from sparkcdc.cli.live import log_to
from sparkcdc.cli.status_view import status_view
from sparkcdc.core.printable import PrintableFormatter, printable, printable_name
from sparkcdc.pipeline.status import PipelineStatus, TableStatus

HOSTILE = "shop.o\x1b]0;pwned\x07rders\x1b[2J\r\n[bold]x\u202e"


def test_controls_are_escaped_and_the_rest_kept() -> None:
    assert printable("a\x1b[2Jb\tc\nd\x7f\x9b\u202e") == "a\\x1b[2Jb\tc\nd\\x7f\\x9b\\u202e"
    assert printable_name("a\nb\tc") == "a\\x0ab\\x09c"
    assert printable("ünïcödé 表") == "ünïcödé 表"


def test_log_lines_carry_no_control_characters() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(PrintableFormatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("sparkcdc.test_printable")
    logger.addHandler(handler)
    try:
        logger.warning("re-reading %s", HOSTILE)
        try:
            raise ValueError(f"table {HOSTILE}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\\x1b]0;pwned\\x07rders\\x1b[2J" in text


def test_the_live_console_and_its_log_escape_them() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    root = logging.getLogger()
    kept = (list(root.handlers), root.level, logging.getLogger("sparkcdc").level)
    try:
        log_to(console, None)
        logging.getLogger("sparkcdc.test_printable").info("captured %s", HOSTILE)
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in kept[0]:
            root.addHandler(handler)
        root.setLevel(kept[1])
        logging.getLogger("sparkcdc").setLevel(kept[2])
    assert "\x1b" not in out.getvalue() and "\\x1b[2J" in out.getvalue()


def test_status_shows_names_escaped() -> None:
    table = TableStatus(HOSTILE, "streaming", 10, 10, 1.0, 1, 2, 3, f"lake/{HOSTILE}")
    status = PipelineStatus(
        f"p{HOSTILE}", "mysql", "delta", "ckpt", 3, 0.0, "binlog.1:4", None, None, None, None,
        None, None, None, None, None, None, [table],
    )  # fmt: skip
    out = io.StringIO()
    Console(file=out, force_terminal=False, width=300).print(status_view(status))
    text = out.getvalue()
    assert "\x1b" not in text and "\\x1b[2J" in text and "[bold]x" in text
