"""The embedded broker's KRaft cluster id is one the storage tool takes."""

from __future__ import annotations

import base64

from sparkcdc.embedded.kafka import cluster_id


def test_cluster_ids_are_16_bytes_and_never_look_like_an_option() -> None:
    # one id in 64 starts with "-" when drawn freely: 2,000 draws meet one almost surely
    # (the storage tool took it for an option: "--cluster-id: expected one argument")
    for _ in range(2000):
        text = cluster_id()
        assert not text.startswith("-"), text
        assert len(base64.urlsafe_b64decode(text + "==")) == 16
