"""Options of the black-box text methods given to a gradient method are refused, not ignored
(issue 33, item 5): ``integrated_gradients(empty_token_id=5)`` was accepted and changed nothing."""

import numpy as np
import pytest
import torch

import featurelens as fl

from ._planted import SPECIALS, TEXT, WORDS, word_tokenizer

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")


class Bag(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(len(SPECIALS) + len(WORDS), 4)
        self.out = torch.nn.Linear(4, 2)

    def forward(self, ids):
        return self.out(torch.tanh(self.emb(ids)).mean(1))


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer()


def test_integrated_gradients_refuses_empty_token_id_and_points_to_baseline(tok):
    with pytest.raises(ValueError, match=r"empty_token_id=5 is an option of the black-box methods \(the token sent for "
                                         r"the coalition that keeps no token\); 'integrated_gradients' evaluates no "
                                         r"coalition \(its reference input is baseline= .*baseline=5\)\); expected "
                                         r"empty_token_id=None"):
        fl.explainer("integrated_gradients", Bag(), tokenizer=tok, empty_token_id=5)


@pytest.mark.parametrize("method", ["saliency", "input_x_gradient", "integrated_gradients"])
def test_gradient_methods_refuse_a_budget(tok, method):
    with pytest.raises(ValueError, match=rf"budget=100 is an option of the black-box methods .*'{method}' evaluates no "
                                         r"coalition .*expected budget=None"):
        fl.explainer(method, Bag(), tokenizer=tok, budget=100)


def test_the_reference_token_is_set_by_baseline_and_changes_the_values(tok):
    model = Bag()
    pad = fl.explainer("integrated_gradients", model, tokenizer=tok, n_steps=16).explain(TEXT, target=1)
    five = fl.explainer("integrated_gradients", model, tokenizer=tok, n_steps=16, baseline=5).explain(TEXT, target=1)
    assert np.abs(np.asarray(pad.values) - np.asarray(five.values)).max() > 1e-6


def test_black_box_methods_still_take_empty_token_id():
    bare = word_tokenizer(specials=False)  # no [CLS]/[SEP]: deleting every word leaves no token
    e = fl.explainer("exact", Bag(), tokenizer=bare, empty_token_id=0).explain(TEXT, target=1)
    assert e.params["empty_token_id"] == 0
