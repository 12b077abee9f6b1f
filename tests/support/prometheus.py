"""Reading a pipeline's Prometheus endpoint over HTTP, as a scraper does."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

#: A sample's name and its labels other than ``pipeline``.
Sample = tuple[str, frozenset[tuple[str, str]]]


def scrape(port: int) -> dict[Sample, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset((k, v) for k, v in s.labels.items() if k != "pipeline")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
