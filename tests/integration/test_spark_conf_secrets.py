"""A pipeline's ``spark-conf`` (where storage keys go) never reaches the command line of the
JVM ``local_session`` starts, which any local user can read (``ps``, ``/proc/<pid>/cmdline``):
the settings go through a properties file only the user can read, removed once the JVM
runs, and still arrive whole (issue #63, docs/security.md).

The JVM is started in a Python process of its own (the test session's JVM is shared and
already running), which reports what the JVM's command line held and what it was given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: A value with every character a properties file treats specially.
SECRET = "k3y=a:b#c!d e\\f\tg\nh\u00e9\u4e2d-end"

CHILD = """
import json, os, sys, tempfile
from pathlib import Path
from sparkcdc.spark.session import local_session

secret = json.loads(sys.argv[1])
conf_folders = lambda: set(Path(tempfile.gettempdir()).glob("sparkcdc-conf-*"))
before = conf_folders()
spark = local_session(
    "conf-secrets",
    master="local[1]",
    conf={"spark.hadoop.fs.s3a.secret.key": secret, "spark.sql.shuffle.partitions": "3"},
    class_archive=False,
)
pid = spark.sparkContext._gateway.proc.pid
with open(f"/proc/{pid}/cmdline", "rb") as f:  # spark-submit's script exec'ed the JVM
    cmdline = f.read().decode("utf-8", "replace")
with open(f"/proc/{pid}/environ", "rb") as f:
    environ = f.read().decode("utf-8", "replace")
print(json.dumps({
    "cmdline": cmdline,
    "environ_has_secret": secret in environ,
    "given": spark.sparkContext.getConf().get("spark.hadoop.fs.s3a.secret.key"),
    "hadoop": spark.sparkContext._jsc.hadoopConfiguration().get("fs.s3a.secret.key"),
    "shuffle": spark.conf.get("spark.sql.shuffle.partitions"),
    "ui": spark.conf.get("spark.ui.enabled"),
    "files_left": [str(p) for p in conf_folders() - before],
    "submit_args": os.environ.get("PYSPARK_SUBMIT_ARGS"),
}))
spark.stop()
"""


def test_spark_conf_values_stay_off_the_jvm_command_line(tmp_path: Path) -> None:
    # a temp folder of its own: another test process starting a JVM at the same moment
    # has its own properties folder in the shared one for a moment
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(SECRET)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(own_tmp)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "org.apache.spark.deploy.SparkSubmit" in seen["cmdline"]  # the JVM's own
    assert "--properties-file" in seen["cmdline"]
    for part in ("k3y", "secret.key", "shuffle.partitions"):
        assert part not in seen["cmdline"], seen["cmdline"]
    assert not seen["environ_has_secret"]
    # every setting arrived, the secret unchanged, and ours beneath the user's
    assert seen["given"] == SECRET
    assert seen["hadoop"] == SECRET
    assert seen["shuffle"] == "3"
    assert seen["ui"] == "false"
    assert seen["files_left"] == []  # removed once the JVM runs
    assert seen["submit_args"] is None  # the environment as it was
