"""fl.explainer(name, model, tokenizer=...): every text method on one planted task."""

import numpy as np
import pytest

import featurelens as fl
from featurelens.text import TextExplainer

from ._planted import TEXT, PlantedClassifier, word_tokenizer

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

PLANTED = {"great", "love", "not", "bad"}
OTHERS = 11 * 0.04 - 2 * 0.04 - 2 * 0.04 - 0.04  # the seven other words at 0.04 each (the#0, the#8 included)


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer()


@pytest.fixture(scope="module")
def model():
    return PlantedClassifier().eval()


BLACK_BOX = {"exact_shapley": {}, "kernel_shap": {"budget": 600}, "permutation_shap": {"budget": 600},
             "lime": {"budget": 800}, "feature_ablation": {}}
GRADIENT = {"saliency": {}, "input_x_gradient": {}, "integrated_gradients": {"n_steps": 64},
            "layer_integrated_gradients": {"n_steps": 64}}


@pytest.mark.parametrize("name", list(BLACK_BOX) + list(GRADIENT))
def test_every_method_ranks_the_planted_words_first(name, model, tok):
    ex = fl.explainer(name, model, tokenizer=tok, target=1, **{**BLACK_BOX, **GRADIENT}[name])
    assert isinstance(ex, TextExplainer)
    e = ex.explain(TEXT)
    assert isinstance(e, fl.Explanation) and e.values.shape == (1, 11)
    assert e.feature_names == ["the#0", "movie", "was", "not", "bad", "and", "I", "love", "the#8", "great", "ending"]
    top = {e.feature_names[i] for i in np.argsort(-np.abs(e.values[0]))[:4]}
    assert top == PLANTED, (name, dict(zip(e.feature_names, np.round(e.values[0], 3))))


def test_exact_and_ig_values(model, tok):
    # Shapley values of the planted game: the pair's 2.0 split equally, the others 0.04 each.
    shapley = fl.explainer("exact", model, tokenizer=tok, target=1).explain(TEXT)
    expected = np.full(11, 0.04)
    expected[[3, 4]] = 1.0
    expected[9], expected[7] = 1.0, 0.6
    np.testing.assert_allclose(shapley.values[0], expected, atol=1e-10)
    # IG from the zero (pad) embeddings: along the straight path the pair term is 2 a^4, split
    # equally by symmetry, so IG equals the Shapley values here (to the quadrature error).
    ig = fl.explainer("integrated_gradients", model, tokenizer=tok, target=1, n_steps=64).explain(TEXT)
    np.testing.assert_allclose(ig.values[0], expected, atol=1e-6)


def test_spex_finds_the_pair(model, tok):
    inter = fl.explainer("spex", model, tokenizer=tok, target=1, budget=1000, max_order=2).explain(TEXT)
    assert isinstance(inter, fl.Interactions)
    (pair, value), = inter.top(1, order=2)
    assert pair == (3, 4) and abs(value) == pytest.approx(0.5, abs=1e-6)  # "not" x "bad"
    proxy = fl.explainer("proxy_spex", model, tokenizer=tok, target=1, budget=300, max_order=2,
                         n_estimators=30).explain(TEXT)
    assert proxy.top(1, order=2)[0][0] == (3, 4)


def test_units_removals_and_lists(model, tok):
    # token players on a word-level tokenizer are the words; masking a word (its embedding zero) is
    # the same as deleting it for this model.
    words = fl.explainer("exact", model, tokenizer=tok, target=1).explain(TEXT)
    tokens = fl.explainer("exact", model, tokenizer=tok, target=1, unit="token", removal="mask").explain(TEXT)
    np.testing.assert_allclose(tokens.values, words.values, atol=1e-12)
    two = fl.explainer("feature_ablation", model, tokenizer=tok, target=1).explain([TEXT, "not bad"])
    assert [e.values.shape for e in two] == [(1, 11), (1, 2)]
    np.testing.assert_allclose(two[1].values[0], [2.0, 2.0])
    sentences = fl.explainer("exact", model, tokenizer=tok, target=1, unit="sentence").explain("great plot. not bad!")
    assert sentences.feature_names == ["great plot.", "not bad!"]


def test_whitespace_tokenizer_on_a_text_callable():
    def on_texts(texts):
        return np.array([[float("great" in t.split())] for t in texts])

    e = fl.explainer("feature_ablation", on_texts, tokenizer="whitespace", inputs="text").explain("a great plot")
    np.testing.assert_allclose(e.values[0], [0.0, 1.0, 0.0])


def test_output_units(model, tok):
    raw = fl.explainer("exact", model, tokenizer=tok, target=1).explain("not bad")
    prob = fl.explainer("exact", model, tokenizer=tok, target=1, output="probability").explain("not bad")
    # v(S) = softmax([-s, s])_1 = sigmoid(2 s): v(N) = sigmoid(4), v(empty) = 1/2, the pair symmetric
    assert prob.values[0] == pytest.approx([(1 / (1 + np.exp(-4.0)) - 0.5) / 2] * 2)
    assert raw.values[0] == pytest.approx([1.0, 1.0])


def test_errors(model, tok):
    with pytest.raises(ValueError, match="name"):
        fl.explainer("integrated_gradient", model, tokenizer=tok)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        fl.explainer("saliency", lambda ids: ids, tokenizer=tok)
    with pytest.raises(ValueError, match="HuggingFace tokenizer"):
        fl.explainer("saliency", model, tokenizer="whitespace")
    with pytest.raises(ValueError, match="tokenizer"):
        fl.explainer("lime", model, tokenizer="bpe")
    with pytest.raises(TypeError, match="tokenizer"):
        fl.explainer("lime", model, tokenizer=3)
    with pytest.raises(ValueError, match="unit"):
        fl.explainer("lime", model, tokenizer=tok, unit="letter")
    with pytest.raises(ValueError, match="output"):
        fl.explainer("lime", model, tokenizer=tok, output="log_odds")
    with pytest.raises(TypeError, match="text"):
        fl.explainer("lime", model, tokenizer=tok).explain(3)
    with pytest.raises(ValueError, match="token ids"):
        fl.explainer("lime", model, tokenizer="whitespace").explain("not bad")
