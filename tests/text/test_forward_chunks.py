"""Text models are called in chunks of sequences bounded by their estimated activations
(featurelens.text._forward): the chunk bound changes how many sequences go through the model at
once, never the values."""

import types

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.text import GenerationGame, Players
from featurelens.text import _forward
from featurelens.text._explainer import module_classifier

from ._planted import TEXT
from .test_token_ids import V, WordTokenizer


class Recorder(torch.nn.Module):
    """A float64 embedding-mean classifier (3 classes) with a transformer-style ``config`` that
    records how many sequences each call received."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(V, 6).double()
        self.out = torch.nn.Linear(6, 3).double()
        self.config = types.SimpleNamespace(hidden_size=6, num_attention_heads=2, intermediate_size=24)
        self.rows = []

    def forward(self, ids):
        self.rows.append(int(ids.shape[0]))
        e = torch.tanh(self.emb(ids))
        return self.out(e.mean(1) + e[:, :1].mul(e[:, -1:]).sum(1))


def test_activation_bytes_from_the_config():
    """4 L (intermediate + 4 hidden + 2 heads L) bytes a sequence, MiniLM's numbers; the rows of a
    call are the bound over that, a batch_size given is used as it is."""
    minilm = torch.nn.Module()
    minilm.config = types.SimpleNamespace(hidden_size=384, num_attention_heads=12, intermediate_size=1536)
    per_row = 4 * 512 * (1536 + 4 * 384 + 2 * 12 * 512)
    assert _forward.activation_bytes(minilm, 512) == per_row == 31_457_280
    assert _forward.rows_per_forward(minilm, 512) == 2**28 // per_row == 8
    assert _forward.rows_per_forward(minilm, 512, batch_size=3) == 3
    assert _forward.rows_per_forward(minilm, 4) == 1024  # at most DEFAULT_BATCH_SIZE rows
    gpt2 = torch.nn.Module()
    gpt2.config = types.SimpleNamespace(n_embd=768, n_head=12, n_inner=None)  # GPT2Config's names
    assert _forward.activation_bytes(gpt2, 200) == 4 * 200 * (4 * 768 + 4 * 768 + 2 * 12 * 200)
    # No config: the widest embedding (6 here), no attention term.
    bag = torch.nn.Sequential(torch.nn.Embedding(10, 6))
    assert _forward.activation_bytes(bag, 10) == 4 * 10 * (4 * 6 + 4 * 6)


@pytest.mark.parametrize("removal", ["pad", "delete"])
@pytest.mark.parametrize("method", ["kernel_shap", "permutation_shap", "lime"])
def test_chunk_bound_never_changes_the_values(monkeypatch, method, removal):
    tok = WordTokenizer()
    model = Recorder()

    def run(bound):
        monkeypatch.setattr(_forward, "FORWARD_CHUNK_BYTES", bound)
        model.rows.clear()
        e = fl.explainer(method, model, tokenizer=tok, removal=removal, budget=64, seed=3).explain(TEXT)
        return e, list(model.rows)

    whole, whole_rows = run(2**40)  # every sequence of one length in one call
    one, one_rows = run(1)  # one sequence a call
    assert max(one_rows) == 1 and len(one_rows) == sum(whole_rows)
    if removal == "pad":  # one length: the unbounded path sends a chunk of the game in one call
        assert max(whole_rows) > 8
    np.testing.assert_array_equal(one.values, whole.values)
    np.testing.assert_array_equal(one.base_values, whole.base_values)
    assert one.model_calls == whole.model_calls
    # A bound of three whole-text sequences: calls of three (more of the shorter sequences that
    # deletion leaves), the same values again.
    per_row = _forward.activation_bytes(model, len(Players(TEXT, tok).input_ids))
    few, few_rows = run(3 * per_row)
    assert max(few_rows) == 3 if removal == "pad" else len(few_rows) >= len(whole_rows)
    np.testing.assert_array_equal(few.values, whole.values)


def test_module_classifier_outputs_in_input_order(monkeypatch):
    """Ragged sequences (several lengths) split into calls: each row's logits are those of the
    sequence alone."""
    monkeypatch.setattr(_forward, "FORWARD_CHUNK_BYTES", 1)
    model = Recorder()
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, V, size=int(k)).tolist() for k in rng.integers(1, 6, size=25)]
    got = module_classifier(model)(seqs)
    with torch.no_grad():
        alone = np.stack([model(torch.tensor([s])).numpy()[0] for s in seqs])
    np.testing.assert_array_equal(got, alone)
    model.rows.clear()
    module_classifier(model, batch_size=4)(seqs)  # a batch_size given is the rows a call
    assert max(model.rows) <= 4


@pytest.mark.slow  # builds a transformers GPT-2 (imports its modelling code: seconds)
def test_generation_game_keeps_last_logits(monkeypatch):
    """A transformers LM that takes logits_to_keep: the game asks for the last T + 1 positions
    only, and its values are the continuation's log-probability read from the full logits."""
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(vocab_size=V, n_positions=32, n_embd=8, n_layer=1, n_head=2)
    torch.manual_seed(0)
    lm = transformers.GPT2LMHeadModel(config).eval()
    assert _forward.keeps_last_logits(lm)
    tok = WordTokenizer()
    players = Players(TEXT, tok, unit="word")
    cont = [7, 9, 11]
    game = GenerationGame(lm, tok, players, cont, removal="pad")
    masks = np.random.default_rng(1).random((12, players.n)) < 0.5
    values = game(masks)
    prompt_ids = players.input_ids
    expected = []
    with torch.no_grad():
        for row in masks:
            kept = np.where((players.owner < 0) | row[np.maximum(players.owner, 0)], prompt_ids, tok.pad_token_id)
            ids = torch.as_tensor(np.concatenate([kept, cont])[None, :])
            logp = lm(input_ids=ids).logits[0].double().log_softmax(-1)
            P = len(kept)
            expected.append(sum(float(logp[P - 1 + j, t]) for j, t in enumerate(cont)))
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-5)
    # The game's calls are bounded by DEFAULT_CHUNK_BYTES (logits and activations): 1 byte, one
    # sequence a call; float32 sums over another batch size may differ in the last bits.
    from featurelens.text import _games

    assert game.rows_per_call(len(prompt_ids) + len(cont)) > 1
    monkeypatch.setattr(_games, "DEFAULT_CHUNK_BYTES", 1)
    assert game.rows_per_call(len(prompt_ids) + len(cont)) == 1
    np.testing.assert_allclose(game(masks), values, rtol=0, atol=1e-6)
