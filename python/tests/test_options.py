"""The loaders' keyword arguments have one typed definition
(loch.loader.LoaderOptions and the adapters' extensions of
CommonLoaderOptions) that the ``**kwargs`` of ``ds.numpy/pytorch/jax/
tensorflow`` (and a Mixture's) name, and that stays in step with the
constructors that take them. Checked with inspect, without a type
checker."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest

import loch
from loch.loader import CommonLoaderOptions, Loader, LoaderOptions

# The keywords an adapter sets itself from its view of the run.
ADAPTER_SET = {"rank", "world_size", "split", "epochs"}


def keywords(fn: Callable[..., Any]) -> dict[str, str]:
    """fn's keyword-only parameters and their annotations (as written)."""
    params = inspect.signature(fn).parameters.values()
    return {p.name: str(p.annotation) for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def fields(options: type) -> dict[str, str]:
    """A TypedDict's keys and their annotations (as written)."""
    out = {}
    for klass in reversed(options.__mro__):
        for name, ann in vars(klass).get("__annotations__", {}).items():
            out[name] = ann.__forward_arg__ if isinstance(ann, typing.ForwardRef) else str(ann)
    return out


def test_loader_options_mirror_the_loader() -> None:
    assert fields(LoaderOptions) == keywords(Loader.__init__)
    assert set(LoaderOptions.__optional_keys__) == set(fields(LoaderOptions))  # total=False: all optional
    assert set(fields(CommonLoaderOptions)) == set(fields(LoaderOptions)) - ADAPTER_SET


@pytest.mark.parametrize(
    ("module", "loader", "options"), [("loch.torch", "TorchLoader", "TorchOptions"), ("loch.jax", "JaxLoader", "JaxOptions")]
)
def test_adapter_options_mirror_the_adapter_loader(module: str, loader: str, options: str) -> None:
    mod = pytest.importorskip(module)
    init = getattr(mod, loader).__init__
    assert fields(getattr(mod, options)) == fields(CommonLoaderOptions) | keywords(init)
    assert str(inspect.signature(init).parameters["options"].annotation) == "Unpack[CommonLoaderOptions]"


def test_tensorflow_dataset_takes_loader_options() -> None:
    # loch.tensorflow imports tensorflow; read its source's signature instead.
    import ast
    from pathlib import Path

    tree = ast.parse((Path(loch.__file__).parent / "tensorflow.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "dataset")
    assert fn.args.kwarg is not None and ast.unparse(fn.args.kwarg.annotation) == "Unpack[LoaderOptions]"
    assert fn.args.kwonlyargs == []


@pytest.mark.parametrize("owner", [loch.Dataset, loch.Mixture])
@pytest.mark.parametrize(
    ("method", "options"),
    [("numpy", "LoaderOptions"), ("pytorch", "TorchOptions"), ("jax", "JaxOptions"), ("tensorflow", "LoaderOptions")],
)
def test_loader_methods_name_the_options(owner: type, method: str, options: str) -> None:
    fn = getattr(owner, method)
    # As written: (self, **kwargs: Unpack[options]), for type checkers (the
    # runtime signature, for help() and completion, lists the keywords
    # themselves: test_arguments.py).
    code = fn.__code__
    assert code.co_varnames[: code.co_argcount] == ("self",) and code.co_kwonlyargcount == 0
    assert code.co_flags & inspect.CO_VARKEYWORDS
    assert fn.__annotations__["kwargs"] == f"Unpack[{options}]"
    assert fn.__doc__, f"{owner.__name__}.{method} lost its docstring"


def test_typed_options_still_work_at_run_time(rows_ds: loch.Dataset) -> None:
    batches = list(rows_ds.numpy(batch_size=500, columns=["y"], shuffle=False))
    assert [len(b["y"]) for b in batches] == [500, 500, 1]
    with pytest.raises(TypeError, match="bogus"):
        rows_ds.numpy(bogus=1)  # type: ignore[call-arg]
