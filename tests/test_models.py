"""The Model adapter: chunking, targets, output checks, eval mode."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._batching import chunks, default_rows, expansion_index


def test_chunks_cover_range_in_bounded_pieces():
    pieces = list(chunks(10, 4))
    assert [(s.start, s.stop) for s in pieces] == [(0, 4), (4, 8), (8, 10)]
    copy, sample = expansion_index(slice(5, 9), 3)
    assert copy.tolist() == [1, 2, 2, 2] and sample.tolist() == [2, 0, 1, 2]
    assert default_rows(64) == 1024 and default_rows(3 * 32 * 32) == 170 and default_rows(10**7) == 1
    # forward-only passes: up to 16384 rows, 2**19 elements, but at least 8 rows (3x224x224 gave 3)
    assert default_rows(64, forward_only=True) == 8192 and default_rows(3 * 224 * 224, forward_only=True) == 8
    assert default_rows(10**7, forward_only=True) == 8


def test_predict_in_chunks_equals_one_pass():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2).double()
    x = torch.randn(11, 3, dtype=torch.float64)
    sizes = []
    net.register_forward_hook(lambda m, i, o: sizes.append(i[0].shape[0]))
    out = fl.Model(net, batch_size=4).predict(x)
    assert sizes == [4, 4, 3]
    np.testing.assert_allclose(out.numpy(), net(x).detach().numpy())


def test_outputs_of_shape_batch_become_one_column_and_bad_shapes_fail():
    m = fl.Model(lambda a: a.sum(axis=1))
    out = m.predict(np.ones((3, 4), np.float32))
    assert out.shape == (3, 1) and out[0, 0].item() == 4.0
    bad = fl.Model(lambda a: np.ones((len(a), 2, 2)))
    with pytest.raises(ValueError, match=r"outputs of shape \(batch,\) or \(batch, classes\); got output shape \(3, 2, 2\)"):
        bad.predict(np.ones((3, 4), np.float32))
    wrong_rows = fl.Model(lambda a: np.ones(2))
    with pytest.raises(ValueError, match="got output shape"):
        wrong_rows.predict(np.ones((3, 4), np.float32))


def test_model_arguments_are_checked():
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, .*or a callable .*; got int"):
        fl.Model(3)
    with pytest.raises(ValueError, match="accepts must be one of 'numpy', 'torch'"):
        fl.Model(lambda a: a, accepts="jax")
    m = fl.Model(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="already a featurelens Model"):
        fl.Model(m)
    assert fl.Model.wrap(m) is m


def test_inputs_follow_the_model_dtype_and_device():
    net = torch.nn.Linear(3, 2).double()
    m = fl.Model(net)
    t = m.to_tensor(np.ones((2, 3), np.float32))
    assert t.dtype == torch.float64 and t.device == next(net.parameters()).device


# -- one rule for rows per chunk, owned by the Model; fail-safe outputs ----------------------


def _counting_linear(d=4, k=3, seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Linear(d, k).double()
    sizes = []
    net.register_forward_pre_hook(lambda m, args: sizes.append(args[0].shape[0]))
    return net, sizes


def test_wrap_never_changes_a_model_it_was_handed():
    net, _ = _counting_linear()
    m = fl.Model(net, batch_size=8)
    assert fl.Model.wrap(m) is m and fl.Model.wrap(m, batch_size=8) is m
    other = fl.Model.wrap(m, batch_size=3)
    assert other is not m and other.module is net and other.function is net
    assert (m.batch_size, m.auto_batch) == (8, False)  # before the fix: m.batch_size became 3
    assert (other.batch_size, other.auto_batch) == (3, False)
    auto = fl.Model(net)
    fl.Model.wrap(auto, batch_size=5)
    assert auto.auto_batch  # before the fix: the shared Model lost its automatic chunking


def test_explainer_with_another_batch_size_leaves_the_shared_model_alone_and_counts_calls():
    net, sizes = _counting_linear()
    m = fl.Model(net, batch_size=8)
    x = np.random.default_rng(0).normal(size=(10, 4))
    e = fl.explainer("saliency", m, batch_size=3).explain(x, target=0)
    # saliency checks a given target in its own passes (Model.pick): no one-row target pass
    assert m.batch_size == 8 and sizes == [3, 3, 3, 1]
    assert e.params["batch_size"] == 3
    assert e.model_calls == 10 and m.calls == 10  # the derived Model's rows reach both counters
    sizes.clear()
    fl.explainer("saliency", m).explain(x, target=0)
    assert max(sizes) == 8 and m.calls == 20


def test_chunk_rows_is_the_one_rule():
    m = fl.Model(torch.nn.Linear(4, 2), batch_size=6)
    x = torch.zeros(100, 4)
    assert m.chunk_rows(x) == 6 and m.chunk_rows(x, forward_only=True) == 6 and m.chunk_rows(x, 2) == 2
    auto = fl.Model(torch.nn.Linear(3 * 32 * 32, 2))
    big = torch.zeros(2, 3 * 32 * 32)
    assert auto.chunk_rows(big) == default_rows(3 * 32 * 32) == 170
    assert auto.chunk_rows(big, forward_only=True) == 170
    assert auto.chunk_rows(torch.zeros(2, 4), forward_only=True) == 16384


@pytest.mark.parametrize("batch_size", [1, 2, 5, 7, 30])
@pytest.mark.parametrize("reduce", [None, "sum", "mean", "max", "min"])
def test_expanded_forward_equals_the_whole_expansion(batch_size, reduce):
    net, sizes = _counting_linear()
    m = fl.Model(net)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    shifts = torch.randn(3, 5, 4, generator=gen, dtype=torch.float64)
    target = torch.tensor([0, 1, 2, 0, 1])

    def make_rows(copy, sample):
        return x[sample] + shifts[copy, sample]

    out = m.expanded_forward(x, 3, make_rows, target=target, reduce=reduce, batch_size=batch_size)
    assert max(sizes) <= batch_size and sum(sizes) == 15
    full = net(x[None] + shifts).detach().gather(2, target.expand(3, 5)[..., None]).squeeze(2)  # (3, 5)
    expected = {None: full, "sum": full.sum(0), "mean": full.mean(0), "max": full.max(0).values,
                "min": full.min(0).values}[reduce]
    torch.testing.assert_close(out, expected)


def test_expanded_forward_all_outputs_and_transform():
    net, _ = _counting_linear()
    m = fl.Model(net, batch_size=4)
    x = torch.randn(3, 4, dtype=torch.float64)
    scale = torch.arange(1.0, 5.0, dtype=torch.float64)  # copy e multiplies x by e + 1

    def rows(copy, sample):
        return x[sample] * scale[copy][:, None]

    outs = m.expanded_forward(x, 4, rows)
    assert outs.shape == (4, 3, 3)
    ref = torch.stack([net(x * s).detach() for s in scale])
    torch.testing.assert_close(outs, ref)
    # transform sees each chunk's outputs with their copy and sample indices
    sq = m.expanded_forward(x, 4, rows, transform=lambda v, c, s: (v - ref[c, s]).square().sum(1), reduce="sum")
    torch.testing.assert_close(sq, torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="reduce must be one of"):
        m.expanded_forward(x, 4, rows, reduce="median")
    with pytest.raises(ValueError, match="n_expand must be an int >= 1"):
        m.expanded_forward(x, 0, rows)


def test_zero_dim_target_array_is_one_target_for_every_sample():
    m = fl.Model(torch.nn.Linear(4, 3))
    x = torch.zeros(2, 4)
    assert m.resolve_target(np.array(1), x).tolist() == [1, 1]  # was refused as "shape (1,)"
    e = fl.explainer("saliency", torch.nn.Linear(4, 3)).explain(np.ones((2, 4), np.float32), target=np.array(2))
    assert e.target.tolist() == [2, 2]


def test_nan_or_inf_model_outputs_are_refused_in_every_forward():
    def f(a):
        out = a.sum(axis=1, keepdims=True).repeat(2, axis=1)
        out[0, 1] = np.nan
        out[2, 0] = np.inf
        return out

    with pytest.raises(ValueError, match=r"the model returned NaN or inf for 2 of 3 rows"):
        fl.Model(f).predict(np.ones((3, 4)))


def test_unavailable_device_is_a_clear_value_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device='cuda' was requested, but CUDA is not available"):
        fl.Model(torch.nn.Linear(2, 2), device="cuda")
    with pytest.raises(ValueError, match=r"device must name a torch device"):
        fl.Model(torch.nn.Linear(2, 2), device="gpu0")
    with pytest.raises(TypeError, match=r"device must be a string"):
        fl.Model(torch.nn.Linear(2, 2), device=3.5)


class _DetachedNet(torch.nn.Module):
    def __init__(self, how):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.how = how

    def forward(self, x):
        if self.how == "detach":
            return self.lin(x).detach()
        if self.how == "no_grad":
            with torch.no_grad():
                return self.lin(x)
        return self.lin(x).argmax(1)  # integer labels


@pytest.mark.parametrize("how", ["detach", "no_grad"])
def test_detached_outputs_give_a_clear_error_for_gradients(how):
    net = _DetachedNet(how)
    x = np.ones((2, 4), np.float32)
    with pytest.raises(ValueError, match=r"model _DetachedNet returned outputs that do not depend on the input"):
        fl.explainer("saliency", net).explain(x, target=0)
    # forward-only explainers still work on such a model
    assert fl.explainer("occlusion", net).explain(x, target=0).values.shape == (2, 4)


def test_integer_outputs_give_a_clear_error_for_gradients():
    net = _DetachedNet("int")
    x = np.ones((2, 4), np.float32)
    with pytest.raises(TypeError, match=r"model _DetachedNet returned outputs of dtype torch.int64, which carry no gradient"):
        fl.explainer("saliency", net).explain(x, target=0)
    out = fl.Model(net).predict(x)  # forward only: labels become floats, as for numpy callables
    assert out.dtype == torch.float32


def test_non_numeric_outputs_are_refused():
    with pytest.raises(TypeError, match=r"must return a tensor or an array of numbers"):
        fl.Model(lambda a: np.array(["a"] * len(a))).predict(np.ones((2, 3)))


def test_read_only_inputs_are_copied_not_warned_about():
    # pandas copy-on-write frames, np.broadcast_to views and memory maps are read-only: torch
    # warns on them ("not writable") and writing would be undefined, so the adapter copies them.
    import warnings

    x = np.broadcast_to(np.arange(6.0).reshape(1, 6), (3, 6))
    assert not x.flags.writeable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = fl.Model(lambda a: a.sum(1)).to_tensor(x)
    assert t.shape == (3, 6) and float(t[2, 5]) == 5.0


class _TupleNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x), x  # logits and a hidden state


class _NoOutputs(torch.nn.Module):
    def forward(self, x):
        return x[:, :0] * 1.0  # (batch, 0): differentiable, no outputs


_ROWS = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
_AGOP_PATHS = {
    "agop_global": lambda net: fl.explainer("agop_global", net, data=_ROWS).explain(_ROWS, target=0),
    "agop_local": lambda net: fl.explainer("agop_local", net).explain(_ROWS, target=0),
    "agop_weighted": lambda net: fl.explainer("agop_weighted", net, data=_ROWS).explain(_ROWS, target=0),
    "fl.learning.agop": lambda net: fl.learning.agop(net, _ROWS),
    "saliency": lambda net: fl.explainer("saliency", net).explain(_ROWS, target=0),
}


@pytest.mark.parametrize("path", list(_AGOP_PATHS))
def test_a_model_returning_a_tuple_is_refused_by_the_adapter(path):
    # Before: "Can't call numpy() on Tensor that requires grad" (agop_global, agop_weighted,
    # fl.learning.agop, saliency) from deep inside numpy.
    with pytest.raises(TypeError, match=r"model _TupleNet returned a tuple of 2 item\(s\); .*model\(x\)\[0\]"):
        _AGOP_PATHS[path](_TupleNet())


@pytest.mark.parametrize("path", list(_AGOP_PATHS))
def test_a_model_with_no_outputs_is_refused_by_the_adapter(path):
    # Before: "argmax(): Expected reduction dim 1 to have non-zero size" (AGOP), "targets must lie
    # in [0, -1]" (the others).
    with pytest.raises(ValueError, match=r"model _NoOutputs returned 0 outputs per row \(output shape \(\d, 0\)\)"):
        _AGOP_PATHS[path](_NoOutputs())


def test_a_dict_output_is_refused_naming_it():
    class DictNet(torch.nn.Module):
        def forward(self, x):
            return {"logits": x.sum(1, keepdim=True)}

    with pytest.raises(TypeError, match=r"returned a dict .*model\(x\).logits"):
        fl.Model(DictNet()).predict(_ROWS)


def test_the_meta_device_is_refused_it_holds_no_data():
    with pytest.raises(ValueError, match=r"^device='meta' holds no data"):
        fl.Model(torch.nn.Linear(3, 2), device="meta")
    with torch.device("meta"):
        on_meta = torch.nn.Linear(3, 2)  # device=None: the parameters' device, meta
    with pytest.raises(ValueError, match=r"device='meta' holds no data.*to_empty"):
        fl.Model(on_meta)
    with pytest.raises(ValueError, match=r"^device='meta' holds no data"):
        fl.explainer("saliency", fl.Model(torch.nn.Linear(3, 2), device=torch.device("meta")))


def test_detached_copy_counts_its_own_calls_only():
    import torch

    from featurelens.models import Model

    net = torch.nn.Linear(3, 2).double()
    model = Model.wrap(net)
    derived = model.with_batch_size(2)
    part = model.detached()
    x = torch.randn(5, 3, dtype=torch.float64)
    derived.predict(x)
    assert derived.calls == 5 and model.calls == 5  # a derived Model counts in its parent
    part.predict(x)
    assert part.calls == 5 and model.calls == 5  # the detached copy does not
    torch.testing.assert_close(part.predict(x), net(x).detach())
    assert part.module is model.module
