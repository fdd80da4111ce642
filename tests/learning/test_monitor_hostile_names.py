"""The training monitor's figure draws layer and metric names literally (never as mathtext): a
layer named like a TeX macro must not end the plot in a ParseFatalException."""

import matplotlib

matplotlib.use("Agg")

import torch  # noqa: E402

import featurelens as fl  # noqa: E402


def test_monitor_plot_with_hostile_layer_names_draws_them_literally():
    net = torch.nn.Sequential(torch.nn.Linear(3, 2))
    monitor = fl.learning.Monitor(net, torch.zeros(4, 3))
    for step in range(3):
        monitor.log(step, "loss", 1.0 / (step + 1), layer=r"$\undefinedmacro$")
        monitor.log(step, "loss", 2.0 / (step + 1), layer="$x^$")
    fig = monitor.plot(metrics=["loss"])
    fig.canvas.draw()  # raised ParseFatalException before the names were escaped
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == [r"\$\undefinedmacro\$", r"\$x^\$"]
