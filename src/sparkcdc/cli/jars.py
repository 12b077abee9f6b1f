"""``sparkcdc jars``: the Maven coordinates Spark needs for sparkcdc, for
``spark-submit --packages``, ``spark.jars.packages`` or a platform's library manager.

A session sparkcdc builds itself adds them (spark/jars.py); a Spark started otherwise (a
notebook's, a cluster's, ``spark-submit``'s) needs them given: ``--packages "$(sparkcdc
jars)" --exclude-packages "$(sparkcdc jars --excludes)"`` (the excludes keep out the
dependencies PySpark already has). ``--list`` says what each one is for and whether this
machine's Spark already has it (its own jars, ``$SPARK_HOME/jars``) or the session would
take a folder of jars (``$SPARKCDC_JARS_DIR``, a checkout's ``jvm/jars``) instead.
"""

from __future__ import annotations

import argparse
from typing import Any

from sparkcdc.spark.jars import (
    EXCLUDED_DEPENDENCIES,
    JARS_DIR_ENV,
    PACKAGES_KEY,
    SPARK_PACKAGES,
    jar_folder,
    missing_packages,
)


def add_parser(commands: Any) -> None:
    jars = commands.add_parser(
        "jars",
        help="print the Maven coordinates Spark needs for sparkcdc (for --packages or "
        f"{PACKAGES_KEY})",
        description="Print the Maven coordinates Spark needs for sparkcdc, comma-separated, for "
        'spark-submit --packages "$(sparkcdc jars)" --exclude-packages "$(sparkcdc jars '
        '--excludes)", or spark.jars.packages and spark.jars.excludes.',
    )
    which = jars.add_mutually_exclusive_group()
    which.add_argument(
        "--excludes",
        action="store_true",
        help="the dependencies to leave out (PySpark has them), comma-separated",
    )
    which.add_argument(
        "--list",
        action="store_true",
        help="one per line, with what it is for and whether this machine's Spark has it",
    )


def jars(args: argparse.Namespace) -> int:
    if args.excludes:
        print(",".join(EXCLUDED_DEPENDENCIES))
        return 0
    if not args.list:
        print(",".join(p.coordinate for p in SPARK_PACKAGES))
        return 0
    missing = missing_packages({})
    folder = jar_folder()
    for package in SPARK_PACKAGES:
        found = "resolved by Spark at start" if package in missing else "in Spark's own jars"
        print(f"{package.coordinate}\t{package.purpose} ({found})")
    if folder is not None:
        print(f"# sessions sparkcdc builds take the jars in {folder} instead ({JARS_DIR_ENV})")
    return 0
