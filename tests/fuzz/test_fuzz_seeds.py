"""The short form of the C decoders' fuzz harness (docs/fuzzing.md): each target's committed
seed corpus replayed under ASan + UBSan. A memory error, undefined behaviour, an exception
the decoder does not document, two outputs that disagree or an input that runs away fails
the test with the sanitizer's report. Builds with the system C compiler (gcc's sanitizer
runtimes and the de_DE locale come from scripts/bootstrap.sh)."""

from __future__ import annotations

import pytest

from tests.fuzz import fuzz


@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_seed_corpus_replays_clean_under_asan_and_ubsan(target: str) -> None:
    seeds = [p for p in (fuzz.CORPUS / target).iterdir() if p.is_file()]
    assert len(seeds) >= 5
    done = fuzz.replay(target)
    assert done.returncode == 0, done.stderr[-6000:]
    assert done.stdout.strip() == f"{len(seeds)} inputs replayed"
