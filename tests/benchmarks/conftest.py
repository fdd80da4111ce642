"""Shared by the tests of the benchmark scripts' helpers."""

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")


@pytest.fixture(scope="module")
def benchmark_script():
    """``benchmark_script("bench_sae")``: a script of benchmarks/ imported as a module, with
    benchmarks/ on sys.path while the test module runs (the scripts import ``_common``)."""
    added = BENCHMARKS not in sys.path
    if added:
        sys.path.insert(0, BENCHMARKS)
    try:
        yield importlib.import_module
    finally:
        if added:
            sys.path.remove(BENCHMARKS)
