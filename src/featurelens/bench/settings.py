"""Settings and names of the ground-truth benchmark that the command line shows in ``--help``;
a module without torch, so that ``featurelens benchmark --help`` stays instant."""

__all__ = ["DEFAULT_SETTINGS", "QUICK_SETTINGS", "MODEL_NAMES"]

#: Settings of the default run: all scenarios, backgrounds, models and methods. Measured end to end
#: on a 2-core machine shared with other jobs: 3 min 47 s and 5 min 2 s wall, about 4.9 min CPU
#: (the limit is ten minutes).
DEFAULT_SETTINGS = {"n_samples": 10000, "n_explain": 500, "epochs": 500, "patience": 50, "lr": 5e-3}
#: Settings of ``quick=True``: measured 36-42 s end to end on the same machine (the limit is two
#: minutes). A smoke run: some hard data sets (e.g. translations_rotations/correlated) do not
#: leave the loss plateau with so few samples, and their models stay near chance.
QUICK_SETTINGS = {"n_samples": 2000, "n_explain": 100, "epochs": 150, "patience": 50, "lr": 5e-3}
#: The reference architectures (:data:`featurelens.bench.models.MODELS` maps them to classes).
MODEL_NAMES = ("llr", "mlp", "cnn")
