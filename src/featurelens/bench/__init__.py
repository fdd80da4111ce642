"""The ground-truth benchmark behind ``featurelens benchmark``: the XAI-TRIS reference models,
their training, and the runner that explains and scores them against planted masks."""

from .models import CNN, LLR, MLP, build_model, count_parameters
from .runner import BenchmarkResult, default_methods, run_benchmark
from .training import train_model

__all__ = [
    "LLR",
    "MLP",
    "CNN",
    "build_model",
    "count_parameters",
    "train_model",
    "run_benchmark",
    "BenchmarkResult",
    "default_methods",
]
