"""Builds and runs the fuzz targets of the C decoders under ASan + UBSan (docs/fuzzing.md).

``replay`` (the short form, in ``make test`` through test_fuzz_seeds.py): each target built
with the system C compiler and replay.c, run once over its committed seed corpus
(``tests/fuzz/corpus/<target>/``). ``run`` (``make fuzz``, by hand): each target built with
clang's libFuzzer and fuzzed for ``--seconds``; new inputs go to ``build/fuzz/work/``,
findings to ``build/fuzz/findings/<target>/`` (copy one into the corpus, named after the
case, once it is fixed). ``seeds`` rewrites the corpus's ``base-*`` seeds (valid inputs of
each decoder, to start from).

    .venv/bin/python -m tests.fuzz.fuzz replay [target ...]
    .venv/bin/python -m tests.fuzz.fuzz run --seconds 600 [target ...]

Builds go to ``build/fuzz/<engine>-<hash>/`` (the hash covers the sources and flags, so an
edit rebuilds); ``--csrc DIR`` builds against other decoder sources, e.g. an older commit's,
to check that a seed finds what it was kept for.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = ROOT / "build" / "fuzz"
CORPUS = HERE / "corpus"
TARGETS = ("rowdecode", "pgdecode", "mysqlarrow")

SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
CFLAGS = ["-g", "-O1", "-fno-omit-frame-pointer", "-std=gnu11", "-Wall", "-Wno-unused-function"]
#: ASan/UBSan settings of every run: abort with a stack on the first error; CPython's own
#: allocations at exit are not leaks of ours; 2 GiB of RSS is a runaway input.
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=1:handle_abort=1:hard_rss_limit_mb=2048"
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1"


def _python_flags() -> tuple[list[str], list[str]]:
    """(compile, link) flags that embed this interpreter (the venv's base Python)."""
    var = sysconfig.get_config_var
    include = [f"-I{sysconfig.get_paths()['include']}"]
    version = var("LDVERSION") or var("VERSION")
    libs = shlex.split(var("LIBS") or "") + shlex.split(var("SYSLIBS") or "")
    if var("Py_ENABLE_SHARED"):
        libdir = var("LIBDIR")
        return include, [f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-lpython{version}", *libs]
    static = Path(var("LIBPL")) / str(var("LIBRARY"))
    return include, [str(static), *libs, "-Wl,-export-dynamic"]


def _pkg_config(*args: str) -> list[str]:
    return shlex.split(subprocess.check_output(["pkg-config", *args, "libmariadb"], text=True))


def build(target: str, engine: str, csrc: Path | None = None) -> Path:
    """The target's binary for ``engine`` ("replay": $CC or cc with replay.c; "libfuzzer":
    clang), built unless a binary of the same sources and flags exists."""
    csrc = (csrc or ROOT / "csrc").resolve()
    cc = (os.environ.get("CC") or "cc") if engine == "replay" else "clang"
    if shutil.which(cc) is None:
        raise SystemExit(f"{cc} not found: run SPARKCDC_FUZZ_CLANG=1 scripts/bootstrap.sh")
    py_cflags, py_ldflags = _python_flags()
    cflags = [*CFLAGS, *SANITIZERS, f"-I{csrc}", *py_cflags]
    ldflags = list(py_ldflags)
    if target == "mysqlarrow":
        cflags += _pkg_config("--cflags")
        ldflags += _pkg_config("--libs")
    sources = [HERE / f"fuzz_{target}.c"]
    if engine == "replay":
        sources.append(HERE / "replay.c")
    else:
        cflags[cflags.index(SANITIZERS[0])] = "-fsanitize=fuzzer,address,undefined"
    key = hashlib.sha256()
    for path in [*sources, HERE / "harness.h", *sorted(csrc.glob("*.[ch]"))]:
        key.update(path.name.encode() + path.read_bytes())
    key.update(" ".join([cc, *cflags, *ldflags]).encode())
    out = BUILD / f"{engine}-{key.hexdigest()[:12]}" / target
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{target}.{os.getpid()}")
    command = [cc, *cflags, *map(str, sources), "-o", str(partial), *ldflags]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"building {target} failed:\n{shlex.join(command)}\n{done.stderr}")
    partial.replace(out)  # atomic: parallel test workers may build the same binary
    return out


def locale_dir() -> Path:
    """LOCPATH holding de_DE.UTF-8 (decimal comma), compiled once with localedef from the
    Debian ``locales`` sources."""
    path = BUILD / "locale"
    if (path / "de_DE.UTF-8").is_dir():
        return path
    BUILD.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=BUILD))
    made = subprocess.run(
        ["localedef", "-i", "de_DE", "-f", "UTF-8", str(scratch / "de_DE.UTF-8")],
        capture_output=True,
        text=True,
    )
    if not (scratch / "de_DE.UTF-8").is_dir():
        raise SystemExit(
            f"localedef could not build de_DE.UTF-8 ({made.stderr.strip()}): the Debian "
            "package 'locales' is missing (scripts/bootstrap.sh installs it)"
        )
    try:
        scratch.replace(path)
    except OSError:  # another process built it first
        shutil.rmtree(scratch, ignore_errors=True)
    return path


def environment() -> dict[str, str]:
    """The targets' environment: this Python's stdlib, malloc for every Python allocation
    (so ASan sees the decoders' buffers), the sanitizer options, the comma locale."""
    return {
        **os.environ,
        "PYTHONHOME": sys.base_prefix,
        "PYTHONMALLOC": "malloc",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": "",
        "LOCPATH": str(locale_dir()),
        "ASAN_OPTIONS": ASAN_OPTIONS,
        "UBSAN_OPTIONS": UBSAN_OPTIONS,
    }


def replay(
    target: str, inputs: list[Path] | None = None, csrc: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the sanitizer build of ``target`` once over ``inputs`` (default: its corpus)."""
    binary = build(target, "replay", csrc)
    paths = [str(p) for p in inputs or [CORPUS / target]]
    return subprocess.run(
        [str(binary), *paths], env=environment(), capture_output=True, text=True, timeout=600
    )


def fuzz(target: str, seconds: int, csrc: Path | None = None) -> int:
    """libFuzzer on ``target`` for ``seconds`` from its corpus; output streams to stderr.
    Returns libFuzzer's exit code (0: nothing found)."""
    binary = build(target, "libfuzzer", csrc)
    work = BUILD / "work" / target
    findings = BUILD / "findings" / target
    work.mkdir(parents=True, exist_ok=True)
    findings.mkdir(parents=True, exist_ok=True)
    command = [
        str(binary),
        f"-max_total_time={seconds}",
        "-timeout=10",  # an input running 10 s is a finding (a loop)
        "-rss_limit_mb=2048",
        "-malloc_limit_mb=1024",
        "-max_len=4096",
        "-print_final_stats=1",
        f"-artifact_prefix={findings}/",
        str(work),  # new inputs go here, never into the committed corpus
        str(CORPUS / target),
    ]
    print(f"== {target}: {shlex.join(command)}", file=sys.stderr, flush=True)
    return subprocess.run(command, env=environment()).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("replay", "run", "seeds"))
    parser.add_argument("targets", nargs="*", help=f"of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--seconds", type=int, default=600, help="run: per target")
    parser.add_argument("--csrc", type=Path, help="decoder sources (default: csrc/)")
    args = parser.parse_args(argv)
    targets = args.targets or list(TARGETS)
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; valid: {', '.join(TARGETS)}")
    if args.command == "seeds":
        from tests.fuzz.seeds import write_base_seeds

        write_base_seeds(CORPUS)
        return 0
    failed = []
    for target in targets:
        if args.command == "replay":
            done = replay(target, csrc=args.csrc)
            print(f"{target}: {done.stdout.strip() or 'no output'}", file=sys.stderr)
            if done.returncode != 0:
                print(done.stderr[-6000:], file=sys.stderr)
                failed.append(target)
        elif fuzz(target, args.seconds, args.csrc) != 0:
            failed.append(target)
    if failed:
        print(f"findings in: {', '.join(failed)} (see {BUILD / 'findings'})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
