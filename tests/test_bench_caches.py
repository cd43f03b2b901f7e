"""`bench/split_bench.py` measures each reply as new by clearing the renderers' caches: a cache renamed or made
uncached (2fe85209) stopped the bench at its first reply, with nothing in the suite to say so."""

import importlib.util
from pathlib import Path


def test_the_split_bench_clears_every_cache_it_names() -> None:
    path = Path(__file__).resolve().parent.parent / "bench" / "split_bench.py"
    spec = importlib.util.spec_from_file_location("split_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.forget()
