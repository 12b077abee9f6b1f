"""Local servers started on free loopback ports in private directories.

Used by the test harness and by the demo: a real MariaDB (binlog on, ROW, FULL images,
GTID), Oracle's MySQL 8.0 and 5.7 (the same, GTID sets), a real PostgreSQL
(``wal_level=logical``), a real Kafka broker (KRaft) and a Spark standalone cluster, each
from Debian packages, Maven jars or the installed PySpark, never Docker. Every server
lives in its own temp directory and is stopped (and its directory removed) by ``stop()``.
"""

from sparkcdc.embedded.kafka import EmbeddedKafka
from sparkcdc.embedded.mariadb import EmbeddedMariaDB
from sparkcdc.embedded.mysql import EmbeddedMySQL
from sparkcdc.embedded.postgres import EmbeddedPostgres
from sparkcdc.embedded.spark_cluster import EmbeddedSparkCluster

__all__ = [
    "EmbeddedKafka",
    "EmbeddedMariaDB",
    "EmbeddedMySQL",
    "EmbeddedPostgres",
    "EmbeddedSparkCluster",
]
