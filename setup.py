"""Builds sparkcdc's C extensions: the binlog row decoder (docs/binlog-decoder.md), the
snapshot reader into Arrow buffers over libmariadb (docs/snapshot-reader.md), and the
pgoutput row decoder of the PostgreSQL source (connectors/postgres/wal/fastdecode.py).

Everything else about the package lives in pyproject.toml; setuptools merges the two, so
``pip install -e .`` (scripts/bootstrap.sh) compiles them with the system C compiler. The
snapshot reader links the MariaDB C client (Debian ``libmariadb-dev``, which mysqlclient
needs as well); its flags come from ``pkg-config libmariadb`` or ``mariadb_config``.
"""

import shlex
import subprocess

from setuptools import Extension, setup

COMPILE_ARGS = ["-O2", "-std=c11", "-Wall", "-Wno-unused-function"]


def mariadb_flags() -> tuple[list[str], list[str]]:
    """(compile flags, link flags) of the MariaDB C client library."""
    for cflags, libs in (
        (["pkg-config", "--cflags", "libmariadb"], ["pkg-config", "--libs", "libmariadb"]),
        (["mariadb_config", "--include"], ["mariadb_config", "--libs"]),
    ):
        try:
            return (
                shlex.split(subprocess.check_output(cflags, text=True)),
                shlex.split(subprocess.check_output(libs, text=True)),
            )
        except (OSError, subprocess.CalledProcessError):
            continue
    raise SystemExit(
        "sparkcdc needs the MariaDB C client library to build: apt-get install libmariadb-dev "
        "pkg-config (scripts/bootstrap.sh does)"
    )


mariadb_cflags, mariadb_libs = mariadb_flags()

setup(
    ext_modules=[
        Extension(
            "sparkcdc.connectors.mysql.binlog.rowdecode._rowdecode",
            sources=["csrc/rowdecode.c"],
            depends=["csrc/civil.h"],
            extra_compile_args=COMPILE_ARGS,
        ),
        Extension(
            "sparkcdc.connectors.mysql.snapshot._mysqlarrow",
            sources=["csrc/mysqlarrow.c"],
            depends=["csrc/civil.h"],
            extra_compile_args=[*COMPILE_ARGS, *mariadb_cflags],
            extra_link_args=mariadb_libs,
        ),
        Extension(
            "sparkcdc.connectors.postgres.wal._pgdecode",
            sources=["csrc/pgdecode.c"],
            depends=["csrc/civil.h"],
            extra_compile_args=COMPILE_ARGS,
        ),
    ]
)
