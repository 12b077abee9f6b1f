"""External catalog targets of catalogs other than Spark's session catalog, made where
sparkcdc kept them before they got a folder per catalog.

Up to commit 1f75230 an external target (the sink's ``location``) was created in
``<location>/<schema>/<table>`` whatever its catalog; since then a catalog other than
``spark_catalog`` has ``<location>/<catalog>/<schema>/<table>``, so two catalogs' tables
of one name are two folders. A catalog that still knows such a target says where it is,
and nothing changes. One that forgot it (a catalog kept in memory, a metastore reset)
sends the sink to the new folder, where there is no table: left alone, the sink would
create an empty target there while the checkpoint says its rows were written, and the
target would silently lack them. So the folder of old is looked at first: a table there
that may be the target stops the run with what to do (move it); it is never taken back
by itself (see :func:`refuse_earlier_target`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.sinks.delta import catalog
from sparkcdc.sinks.delta.config import location_join
from sparkcdc.sinks.delta.targets import APPENDS_FOR, folder_name


def earlier_folder(location: str, parts: Sequence[str], taken: Collection[str]) -> str | None:
    """Where sparkcdc before the folders per catalog put the external target ``parts``
    (``<location>/<schema>/<table>``); None for the session catalog's (never moved) and
    where that is the folder of another target of the sink now (``taken``: a session
    catalog table of the same schema and name)."""
    if parts[0] == catalog.SESSION_CATALOG:
        return None
    earlier = location_join(location, "/".join(folder_name(n) for n in parts[1:]))
    return None if earlier in taken else earlier


def refuse_earlier_target(
    spark: Any, parts: Sequence[str], earlier: str, folder: str, pipeline_id: str | None
) -> None:
    """Nothing when no Delta table is at the ``earlier`` folder (:func:`earlier_folder`) of
    the external target ``parts``, which its catalog forgot and which is not in its
    ``folder``, or when the table there is another pipeline's; SparkCdcError otherwise.

    The table there is never taken as the target: whose it is says only which pipeline
    wrote it (``sparkcdc.appends-for``), not which of its targets, and a same-named table
    of another catalog, or a target its pipeline routes elsewhere now, would become this
    one, two targets writing one table. Moving the folder is the user's one-time step; the
    sink looks in the target's own folder first."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, earlier):
        return
    detail = DeltaTable.forPath(spark, earlier).detail().first()
    owner = (detail["properties"] or {}).get(APPENDS_FOR) if detail is not None else None
    if owner is not None and pipeline_id is not None and owner != pipeline_id:
        return  # another pipeline's table of the same schema and name
    ours = owner is not None and owner == pipeline_id
    whose = "this pipeline's" if ours else "not marked as this pipeline's"
    raise SparkCdcError(
        f"the Delta sink's target {catalog.sql_name(parts)} is neither in catalog "
        f"'{parts[0]}' nor in its folder {folder}, but a Delta table is in {earlier}, where "
        "earlier versions of sparkcdc kept the external targets of catalogs other than "
        f"{catalog.SESSION_CATALOG}, and it is {whose}. If it is this target, move that "
        f"folder to {folder} (the sink registers it from there); if it is not (e.g. a "
        "same-named table of another catalog), give this sink another 'location' or move "
        "that table. An empty target is not created beside it: the rows the checkpoint "
        "says were written would be missing from it"
    )
