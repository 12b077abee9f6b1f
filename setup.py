"""Builds sparkcdc's C extensions: the binlog row decoder (docs/binlog-decoder.md), the
snapshot reader into Arrow buffers over libmariadb (docs/snapshot-reader.md), and the
pgoutput row decoder of the PostgreSQL source (connectors/postgres/wal/fastdecode.py).

Everything else about the package lives in pyproject.toml; setuptools merges the two, so
``pip install`` (and ``pip install -e .``, scripts/bootstrap.sh) compiles them with the
system C compiler: it needs a C compiler and Python's headers (Debian ``gcc python3-dev``),
and a failed compile says so. The snapshot reader links the MariaDB C client (Debian
``libmariadb-dev``, which mysqlclient needs as well); its flags come from ``pkg-config
libmariadb`` or ``mariadb_config``. Extras cannot steer a build (pip builds one wheel
whatever extras are asked for), so the reader is built where that library is found and
left out where it is not (a PostgreSQL-only machine: the MySQL source then reads snapshots
with mysqlclient); ``SPARKCDC_MYSQL_NATIVE=1`` makes a missing library an error, ``=0``
leaves the reader out.
"""

import os
import shlex
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, PlatformError

COMPILE_ARGS = ["-O2", "-std=c11", "-Wall", "-Wno-unused-function"]


#: ``auto`` (default): build the native MySQL snapshot reader where libmariadb is found;
#: ``1``: it must be built; ``0``: leave it out.
MYSQL_NATIVE_ENV = "SPARKCDC_MYSQL_NATIVE"
MISSING_MARIADB = (
    "sparkcdc's native MySQL snapshot reader needs the MariaDB C client library and "
    "pkg-config: Debian/Ubuntu apt-get install libmariadb-dev pkg-config, Fedora/RHEL dnf "
    "install mariadb-connector-c-devel pkgconf"
)


def mariadb_flags() -> tuple[list[str], list[str]] | None:
    """(compile flags, link flags) of the MariaDB C client library, None when not found."""
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
    return None


def mysql_native_extensions() -> list[Extension]:
    """The snapshot reader over libmariadb, where the library is (see the module's text)."""
    wanted = os.environ.get(MYSQL_NATIVE_ENV, "auto")
    if wanted not in ("auto", "0", "1"):
        raise SystemExit(f"{MYSQL_NATIVE_ENV} is {wanted!r}; valid values: auto, 0, 1")
    flags = None if wanted == "0" else mariadb_flags()
    if flags is None:
        if wanted == "1":
            raise SystemExit(f"{MISSING_MARIADB} ({MYSQL_NATIVE_ENV}=1)")
        print(
            "sparkcdc: building without the native MySQL snapshot reader (MySQL snapshots "
            f"are read with mysqlclient instead): {MISSING_MARIADB}",
            file=sys.stderr,
        )
        return []
    cflags, libs = flags
    return [
        Extension(
            "sparkcdc.connectors.mysql.snapshot._mysqlarrow",
            sources=["csrc/mysqlarrow.c"],
            depends=["csrc/civil.h"],
            extra_compile_args=[*COMPILE_ARGS, *cflags],
            extra_link_args=libs,
        )
    ]


class BuildWithHints(build_ext):
    """A compile that fails for want of a compiler or of Python's headers says which system
    packages bring them, in the error pip shows."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except (CCompilerError, CompileError, ExecError, PlatformError) as exc:
            headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
            found = "present" if os.path.exists(headers) else "missing"
            raise SystemExit(
                f"sparkcdc: building {ext.name} failed ({exc}). sparkcdc's C extensions need a "
                "C compiler and this Python's headers: Debian/Ubuntu apt-get install gcc "
                "python3-dev, Fedora/RHEL dnf install gcc python3-devel (this Python's "
                f"headers: {headers}, {found})"
            ) from exc


setup(
    cmdclass={"build_ext": BuildWithHints},
    ext_modules=[
        Extension(
            "sparkcdc.connectors.mysql.binlog.rowdecode._rowdecode",
            sources=["csrc/rowdecode.c"],
            depends=["csrc/civil.h"],
            extra_compile_args=COMPILE_ARGS,
        ),
        *mysql_native_extensions(),
        Extension(
            "sparkcdc.connectors.postgres.wal._pgdecode",
            sources=["csrc/pgdecode.c"],
            depends=["csrc/civil.h"],
            extra_compile_args=COMPILE_ARGS,
        ),
    ],
)
