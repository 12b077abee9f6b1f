"""Where a chunk's snapshot stands in the binlog: MariaDB's exact position, or a high
watermark (servers without one: MySQL). The whole conformance suite runs again with
``scan.snapshot.consistency: watermark`` (tests/conformance/conftest.py); this checks that
the option takes the path it names, on a real server."""

from __future__ import annotations

import pytest

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import binlog_end, snapshot_position
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.server.connection import connect
from sparkcdc.connectors.mysql.snapshot import consistent
from sparkcdc.connectors.mysql.snapshot.consistent import placed
from sparkcdc.core.errors import SourceConfigurationError, SparkCdcError
from sparkcdc.embedded import EmbeddedMariaDB


def test_a_watermark_is_the_binlog_end_after_the_snapshot_opened(
    mariadb: EmbeddedMariaDB, mysql_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mysql_db)
    options = {**mariadb.source_options(), "database-name": mysql_db, "table-name": "t"}
    configs = {
        mode: parse_config({**options, "scan.snapshot.consistency": mode})
        for mode in ("auto", "exact", "watermark")
    }
    conn = connect(configs["auto"])
    try:
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        exact = snapshot_position(conn)
        assert exact is not None
        # commits after the snapshot opened: its exact position stays, the binlog grows
        mariadb.execute("INSERT INTO t VALUES (1), (2)", database=mysql_db)
        end = binlog_end(conn)
        assert end > exact
        assert placed(conn, configs["auto"], exact) == exact
        assert placed(conn, configs["exact"], exact) == exact
        assert placed(conn, configs["watermark"], exact) == end
        # a batch planned beyond the binlog's end was planned on another server
        beyond = BinlogPosition(end.file, end.pos + 1_000_000)
        with pytest.raises(SparkCdcError, match=r"before the batch's position .*new checkpoint"):
            placed(conn, configs["watermark"], beyond)
        # a server that reports no exact position (MySQL): auto takes the watermark,
        # exact refuses
        with monkeypatch.context() as patched:
            patched.setattr(consistent, "snapshot_position", lambda conn: None)
            assert placed(conn, configs["auto"], exact) == end
            with pytest.raises(SourceConfigurationError, match=r"'auto' or 'watermark'"):
                placed(conn, configs["exact"], exact)
        with conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM `{mysql_db}`.t")
            assert cur.fetchone() == (0,)  # the snapshot saw neither insert
    finally:
        conn.close()
