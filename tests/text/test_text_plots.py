"""fl.plots.text's colour bar and title, and Interactions.top(names=...)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import featurelens as fl  # noqa: E402
from featurelens.interactions import Interactions  # noqa: E402
from featurelens.text import ClassifierGame, GenerationGame, Players, explain  # noqa: E402

TEXT = "the movie was not bad and I love the great ending"


def planted_model(texts):  # class 1: "great" 1.0, "not" and "bad" 2.0 only together
    out = []
    for t in texts:
        w = set(t.split())
        s = 1.0 * ("great" in w) + 2.0 * ({"not", "bad"} <= w)
        out.append([-s, s])
    return np.array(out)


@pytest.fixture(scope="module")
def game():
    return ClassifierGame(planted_model, Players(TEXT), target=1)


def colorbar_of(ax):
    others = [a for a in ax.figure.axes if a is not ax]
    assert len(others) == 1
    return others[0]


def test_colour_bar_scale_units_and_title(game):
    e = explain(game, method="exact")
    ax = fl.plots.text(e, Players(TEXT))
    cax = colorbar_of(ax)
    # the scale runs from -max|v| to +max|v| (here the Shapley value of "great" = 1.0, of "not" 1.0)
    scale = float(np.abs(e.values).max())
    assert cax.get_xlim() == pytest.approx((-scale, scale))
    assert cax.get_xlabel() == "exact value (raw output of class 1); red raises it, blue lowers it"
    assert ax.get_title(loc="left") == "exact: class 1"
    # the bar's colours are the boxes' colours: the word "great" (value +1 = +scale) is the top colour
    great = ax.texts[TEXT.split().index("great")].get_bbox_patch().get_facecolor()
    bar, = [c for c in cax.collections if c.get_cmap().name == "featurelens_text"]  # the colour bar's mesh
    np.testing.assert_allclose(bar.cmap(bar.norm(scale)), great, atol=1e-2)
    np.testing.assert_allclose(bar.cmap(bar.norm(-scale))[:3], (0.0, 0.545, 0.984), atol=1e-2)  # blue
    np.testing.assert_allclose(bar.cmap(bar.norm(0.0))[3], 0.0, atol=1e-2)  # transparent at 0
    plt.close("all")
    prob = ClassifierGame(planted_model, Players(TEXT), target=1, output="softmax")
    ax = fl.plots.text(explain(prob, method="feature_ablation"), Players(TEXT), title="mine")
    assert ax.get_title(loc="left") == "mine"
    assert colorbar_of(ax).get_xlabel().startswith("feature_ablation value (probability of class 1)")
    ax = fl.plots.text(np.arange(3.0) - 1, ["a", "b", "c"], colorbar=False, title=False)
    assert len(ax.figure.axes) == 1 and ax.get_title(loc="left") == ""
    ax = fl.plots.text(np.arange(3.0) - 1, ["a", "b", "c"])
    assert colorbar_of(ax).get_xlabel().startswith("value;") and ax.get_title(loc="left") == ""
    with pytest.raises(TypeError, match="colorbar"):
        fl.plots.text(np.ones(3), ["a", "b", "c"], colorbar="yes")
    with pytest.raises(TypeError, match="title"):
        fl.plots.text(np.ones(3), ["a", "b", "c"], title=3)
    plt.close("all")


def test_continuation_in_title_and_units():
    import torch

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.embed, self.out = torch.nn.Embedding(12, 4), torch.nn.Linear(4, 12)

        def forward(self, ids):
            return self.out(self.embed(ids).cumsum(1))

    def word_ids(s):
        return [int(w[1:]) for w in s.split()]

    g = GenerationGame(LM(), word_ids, Players("w1 w2 w3"), "w4 w5", bos_token_id=0, reduce="mean")
    inter = explain(g, method="spex", budget=200, max_order=1)
    ax = fl.plots.text(inter)
    assert ax.get_title(loc="left") == "spex (Shapley values): continuation 'w4 w5'"
    assert colorbar_of(ax).get_xlabel().startswith(
        "Shapley value from spex (log-probability (nats, the mean over the continuation's tokens))")
    text_ax, _ = fl.plots.text_interactions(inter)
    assert "continuation 'w4 w5'" in text_ax.get_title(loc="left")
    plt.close("all")


def test_interactions_top_names(game):
    inter = explain(game, method="spex", budget=1000, max_order=2, seed=0)
    by_index = inter.top(3)
    by_name = inter.top(3, names=True)
    assert inter.player_names == Players(TEXT).names
    assert [v for _, v in by_name] == [v for _, v in by_index]  # same terms, same order
    assert [names for names, _ in by_name] == [tuple(inter.player_names[i] for i in t) for t, _ in by_index]
    (pair, value), = inter.top(1, order=2, names=True)
    assert pair == ("not", "bad") and abs(value) == pytest.approx(0.5, abs=1e-6)
    # names survive .to(); a list of names works on any interactions; indices stay the default
    assert inter.to("mobius").top(1, order=2, names=True)[0][0] == ("not", "bad")
    plain = Interactions({(0, 1): 2.0, (1,): -1.0}, "mobius", 2)
    assert plain.top(2) == [((0, 1), 2.0), ((1,), -1.0)] and plain.player_names is None
    assert plain.top(1, names=["x", "y"]) == [(("x", "y"), 2.0)]
    with pytest.raises(ValueError, match="names=True needs player names"):
        plain.top(names=True)
    with pytest.raises(ValueError, match="one name per player"):
        plain.top(names=["x"])
    with pytest.raises(TypeError, match="names must be"):
        plain.top(names="xy")
