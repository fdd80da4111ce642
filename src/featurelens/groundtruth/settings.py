"""Settings and names of the ground-truth benchmark that the command line shows in ``--help``;
a module without torch, so that ``featurelens benchmark --help`` stays instant."""

__all__ = ["DEFAULT_SETTINGS", "QUICK_SETTINGS", "MODEL_NAMES"]

#: Settings of the default run: all scenarios, backgrounds, models and methods. Training the 8x8 CNN
#: is most of the work (measured: 204 of 254 worker CPU-seconds; explaining all 25 methods on
#: every model 7 s, scoring 19 s), so training stops after at most 250 epochs (it was 500): CNN test
#: accuracies moved by 0.00 to -0.04 against 500 epochs (a learning rate of 1e-2 with patience 25
#: was as fast but left two models near chance). 250 correctly classified test samples are
#: explained per data set (it was 500; the median method x scenario precision moved by 0.003).
#: Measured on an idle 2-core machine: 2 min 26 s wall, 270 CPU-seconds (it was 4 min 6 s and
#: 434 CPU-seconds); the target is `make demo` in under 4 minutes.
DEFAULT_SETTINGS = {"n_samples": 10000, "n_explain": 250, "epochs": 250, "patience": 50, "lr": 5e-3}
#: Settings of ``quick=True``: measured 36-42 s end to end on the same machine (the limit is two
#: minutes). A smoke run: some hard data sets (e.g. translations_rotations/correlated) do not
#: leave the loss plateau with so few samples, and their models stay near chance.
QUICK_SETTINGS = {"n_samples": 2000, "n_explain": 100, "epochs": 150, "patience": 50, "lr": 5e-3}
#: The reference architectures (:data:`featurelens.groundtruth.models.MODELS` maps them to classes).
MODEL_NAMES = ("llr", "mlp", "cnn")
