"""Hooks the script registered, read from stack samples as py-spy gives them: the user's function
torch's module call runs that is not a forward, or the one torch/utils/hooks.py or the autograd
engine runs (tests/scripts/real_code/activation_hooks.py registers a forward hook on each layer)."""

from __future__ import annotations

from pathlib import Path

from script_lines import line_of

from gpubottle.analysis.module_hooks import BACKWARD_HOOK, FORWARD_HOOK, TENSOR_HOOK, hook_work, registered_at
from gpubottle.analysis.stacks import Frame

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real_code" / "activation_hooks.py"
TORCH = "/venv/lib/python3.11/site-packages/torch"
NUMPY = "/venv/lib/python3.11/site-packages/numpy/lib/_histograms_impl.py"


def _at(text: str) -> int:
    return line_of(SCRIPT, text)


def _forward(*inner: Frame) -> list[Frame]:
    return [Frame("<module>", str(SCRIPT), _at("loss = nn.functional")),
            Frame("Module._wrapped_call_impl", f"{TORCH}/nn/modules/module.py", 1778),
            Frame("Module._call_impl", f"{TORCH}/nn/modules/module.py", 1789),
            Frame("Sequential.forward", f"{TORCH}/nn/modules/container.py", 253),
            Frame("Module._wrapped_call_impl", f"{TORCH}/nn/modules/module.py", 1778),
            Frame("Module._call_impl", f"{TORCH}/nn/modules/module.py", 1884),
            Frame("Module._call_impl.<locals>.inner", f"{TORCH}/nn/modules/module.py", 1845), *inner]


HOOK = Frame("record_activations.<locals>.hook", str(SCRIPT), _at("hist, _ = np.histogram(a"))
LINEAR = [Frame("Linear.forward", f"{TORCH}/nn/modules/linear.py", 134)]


def test_a_forward_hooks_share_is_named_at_its_def_with_its_registration():
    samples = [_forward(HOOK, Frame("histogram", NUMPY, 862))] * 3 + [_forward(HOOK)]
    samples += [_forward(*LINEAR)] * 6
    top = hook_work(samples)
    assert top is not None and top.kind == FORWARD_HOOK and top.share == 0.4
    assert top.function == "record_activations.<locals>.hook"
    assert top.location.endswith(f"activation_hooks.py:{_at('def hook(module, inputs, output)')}")
    assert top.called_at is not None and top.called_at.endswith(
        f"activation_hooks.py:{_at('module.register_forward_hook(')}")


def test_the_models_own_forward_and_a_helper_it_calls_are_no_hook():
    net = Frame("Net.forward", str(SCRIPT), 10)
    helper = Frame("norm_rows", str(SCRIPT), 12)
    assert hook_work([_forward(net), _forward(net, helper), _forward(*LINEAR)] * 3) is None


def test_backward_hooks_and_tensor_hooks_are_named_by_what_ran_them():
    backward = [Frame("<module>", str(SCRIPT), _at("loss.backward()")),
                Frame("Tensor.backward", f"{TORCH}/_tensor.py", 625),
                Frame("_engine_run_backward", f"{TORCH}/autograd/graph.py", 841)]
    grad_hook = Frame("clip_grad_hook", str(SCRIPT), 30)
    top = hook_work([[*backward, grad_hook]] * 3 + [backward])
    assert top is not None and top.kind == TENSOR_HOOK and top.share == 0.75
    module_hook = Frame("log_grads", str(SCRIPT), 30)
    via = Frame("BackwardHook._set_user_hook.<locals>.hook", f"{TORCH}/utils/hooks.py", 97)
    top = hook_work([[*backward, via, module_hook]] * 2)
    assert top is not None and top.kind == BACKWARD_HOOK


def test_the_registration_is_the_call_naming_the_hook_or_its_factory(tmp_path):
    src = tmp_path / "hooks.py"
    src.write_text("import torch\n"
                   "def other(m, i, o):\n    pass\n"
                   "def make(name):\n    def hook(m, i, o):\n        pass\n    return hook\n"
                   "model = torch.nn.Linear(2, 2)\n"
                   "model.register_forward_hook(other)\n"
                   "model.register_forward_hook(make('a'))\n"
                   "model.weight.register_hook(lambda g: g)\n")
    assert registered_at(str(src), "make.<locals>.hook", FORWARD_HOOK) == 10
    assert registered_at(str(src), "other", FORWARD_HOOK) == 9
    assert registered_at(str(src), "unknown", FORWARD_HOOK) == 9  # the first of that kind
    assert registered_at(str(src), "<lambda>", TENSOR_HOOK) == 11
    assert registered_at(str(src), "make.<locals>.hook", BACKWARD_HOOK) is None
