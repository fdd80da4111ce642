"""One units vocabulary: the text games, the text explainer, embedding_attributions and the text
plots name a classifier's class score in the units of featurelens.models._outputs."""

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import featurelens as fl  # noqa: E402
from featurelens.models import _outputs  # noqa: E402
from featurelens.text import ClassifierGame, Players, explain  # noqa: E402

TEXT = "not bad at all"


def logits_of(texts):
    """Three classes; the logits depend on which words are kept."""
    out = np.zeros((len(texts), 3))
    for r, t in enumerate(texts):
        w = set(t.split())
        out[r] = [0.3 * len(w), 1.2 * ("bad" in w) - 0.4 * ("not" in w), 2.0 * ({"not", "bad"} <= w)]
    return out


def test_text_units_are_the_class_score_units_of_the_one_vocabulary():
    assert fl.text.OUTPUTS == _outputs.CLASS_SCORE_UNITS == ("raw", "probability", "log_probability")
    assert all(u in _outputs.UNIT_LABELS for u in _outputs.CLASS_SCORE_UNITS + _outputs.OUTPUTS)


@pytest.mark.parametrize("spelling, units", [("probability", "probability"), ("softmax", "probability"),
                                             ("log_probability", "log_probability"),
                                             ("log_softmax", "log_probability"), ("raw", "raw")])
def test_classifier_game_units_against_torch(spelling, units):
    game = ClassifierGame(logits_of, Players(TEXT), target=2, output=spelling)
    assert game.output == units
    masks = np.random.default_rng(0).random((20, 4)) < 0.5
    z = torch.as_tensor(logits_of([Players(TEXT).keep(m) for m in masks]))
    expected = {"raw": z[:, 2], "probability": z.softmax(1)[:, 2], "log_probability": z.log_softmax(1)[:, 2]}[units]
    np.testing.assert_allclose(game(masks), expected.numpy(), rtol=1e-12, atol=1e-15)
    e = explain(game, method="exact")
    assert e.params["output"] == units


def test_the_text_explainer_takes_the_same_units():
    a = fl.explainer("exact", logits_of, tokenizer="whitespace", inputs="text", target=1, output="log_probability")
    b = fl.explainer("exact", logits_of, tokenizer="whitespace", inputs="text", target=1, output="log_softmax")
    np.testing.assert_array_equal(a.explain(TEXT).values, b.explain(TEXT).values)
    assert a.output == b.output == "log_probability"


def test_bad_units_are_refused_naming_the_argument_and_the_units():
    with pytest.raises(ValueError, match=r"output must be one of 'raw', 'probability', 'log_probability'.*got 'log_odds'"):
        ClassifierGame(logits_of, Players(TEXT), output="log_odds")
    with pytest.raises(ValueError, match=r"output must be one of .*got 'prob'"):
        fl.explainer("exact", logits_of, tokenizer="whitespace", inputs="text", output="prob")


def test_the_plot_label_reads_the_vocabulary_for_new_and_old_records():
    e = explain(ClassifierGame(logits_of, Players(TEXT), target=2, output="probability"), method="exact")
    ax = fl.plots.text(e, Players(TEXT))
    labels = [a.get_xlabel() for a in ax.figure.axes if a.get_xlabel()]
    assert any("probability of class 2" in lab for lab in labels)
    e.params["output"] = "softmax"  # a record written before the vocabulary was one
    ax = fl.plots.text(e, Players(TEXT))
    assert any("probability of class 2" in a.get_xlabel() for a in ax.figure.axes)
    import matplotlib.pyplot as plt

    plt.close("all")
