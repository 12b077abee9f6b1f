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
that this pipeline marked as its own (``sparkcdc.appends-for``) is registered again from
there; one it cannot tell is its own is refused, with what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.sinks.delta import catalog
from sparkcdc.sinks.delta.config import location_join
from sparkcdc.sinks.delta.targets import APPENDS_FOR, folder_name

log = logging.getLogger(__name__)


def earlier_folder(location: str, parts: Sequence[str], taken: Collection[str]) -> str | None:
    """Where sparkcdc before the folders per catalog put the external target ``parts``
    (``<location>/<schema>/<table>``); None for the session catalog's (never moved) and
    where that is the folder of another target of the sink now (``taken``: a session
    catalog table of the same schema and name)."""
    if parts[0] == catalog.SESSION_CATALOG:
        return None
    earlier = location_join(location, "/".join(folder_name(n) for n in parts[1:]))
    return None if earlier in taken else earlier


def moved_target(
    spark: Any, parts: Sequence[str], earlier: str, folder: str, pipeline_id: str | None
) -> str | None:
    """The external target ``parts``, which its catalog forgot and which is not in its
    ``folder``, at its ``earlier`` folder (:func:`earlier_folder`) when a Delta table there
    is this pipeline's (``pipeline_id``); None when there is none there or it is another
    pipeline's. SparkCdcError when whose it is cannot be told: the sink must neither take
    a table that may not be its target nor create an empty one beside it."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, earlier):
        return None
    detail = DeltaTable.forPath(spark, earlier).detail().first()
    owner = (detail["properties"] or {}).get(APPENDS_FOR) if detail is not None else None
    if owner is not None and owner == pipeline_id:
        log.warning(
            "delta sink: the target %s was in %s, its folder before the folders per catalog; "
            "registering it from there (move it to %s at leisure: the sink looks there first)",
            catalog.sql_name(parts),
            earlier,
            folder,
        )
        return earlier
    if owner is not None and pipeline_id is not None:
        return None  # another pipeline's table of the same schema and name
    raise SparkCdcError(
        f"the Delta sink's target {catalog.sql_name(parts)} is neither in catalog "
        f"'{parts[0]}' nor in its folder {folder}, but a Delta table is in {earlier}, where "
        "earlier versions of sparkcdc kept the external targets of catalogs other than "
        f"{catalog.SESSION_CATALOG}, and it is not marked as this pipeline's. If it is this "
        f"target, move that folder to {folder} (the sink registers it from there); if it is "
        "not, give this sink another 'location'. An empty target is not created beside it: "
        "the rows the checkpoint says were written would be missing from it"
    )
