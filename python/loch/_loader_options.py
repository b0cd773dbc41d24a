"""The loader's options: the keyword arguments every loader takes, typed
once (:class:`LoaderOptions`, :class:`CommonLoaderOptions`, for type
checkers and editors), checked once (:class:`LoaderSettings`, the frozen
value a :class:`loch.Loader` and the framework adapters are made from), and
the checks of each (:func:`int_option` and its siblings), whose messages
name the option, what it takes and what was given. Re-exported by
:mod:`loch.loader`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from ._collate import Batch
from ._library import library
from .epochs import Epochs
from .errors import InvalidArgument

__all__ = [
    "ADAPTER_KEYWORDS", "ADAPTER_SETS", "CommonLoaderOptions", "LoaderOptions", "LoaderSettings", "Transform",
    "check_keywords", "go_checked", "int_option", "split_config",
]  # fmt: skip

#: A ``transform`` argument: Go image transforms by column
#: (``{"image": "decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw"}``),
#: one spec string for every image column, or a Python callable applied to
#: each batch.
Transform = Mapping[str, str] | str | Callable[[Batch], Batch]


class CommonLoaderOptions(TypedDict, total=False):
    """The keyword arguments that every loader takes: :class:`loch.Loader`'s,
    but those a framework adapter sets from its own view of the run
    (``rank``, ``world_size``, ``split``, ``epochs``; see
    :class:`LoaderOptions`). The one definition that
    :meth:`loch.Dataset.numpy`, :meth:`~loch.Dataset.pytorch`,
    :meth:`~loch.Dataset.jax`, :meth:`~loch.Dataset.tensorflow` and the
    same methods of :class:`loch.Mixture` extend and type their
    ``**kwargs`` with, so that editors and type checkers see them. Each is
    documented under :class:`loch.Loader`'s Arguments; a test keeps the two in
    step."""

    columns: Sequence[str] | None
    batch_size: int
    shuffle: bool | str
    seed: int
    epoch: int
    drop_last: bool
    rows: Sequence[int] | None
    joined: Sequence[Mapping[str, Any]] | None
    query: str | None
    transform: Transform | None
    sample_transform: Callable[[Batch], Batch] | None
    encoded: Sequence[str] | None
    prefetch_batches: int | None
    prefetch_bytes: int | None
    workers: int | None
    fetch_concurrency: int | None
    window_rows: int | None
    skip_bad_samples: bool
    cache_dir: str | None
    cache_bytes: int | None
    allow_version_change: bool


class LoaderOptions(CommonLoaderOptions, total=False):
    """The keyword arguments of :class:`loch.Loader` (``ds.numpy(**kwargs)``,
    ``ds.tensorflow(**kwargs)``): :class:`CommonLoaderOptions` and the
    shard settings that the torch and jax adapters take as
    ``distributed=`` instead."""

    rank: int
    world_size: int
    split: tuple[int, int] | None
    epochs: Epochs | None


@dataclass(frozen=True, kw_only=True)
class LoaderSettings:
    """The options of a :class:`loch.Loader`, checked once: the keyword
    arguments of :class:`LoaderOptions` (each documented under
    :class:`loch.Loader`'s Arguments) as one frozen value, made by the
    Loader from its keywords or by a framework adapter
    (:mod:`loch.torch`, :mod:`loch.jax`, :mod:`loch.tensorflow`) from its
    ``**options`` and its own view of the run, and given to
    :meth:`loch.Loader.from_settings`.

    Making one checks the types and ranges of the options and raises
    :class:`loch.InvalidArgument`, naming the option, what it takes and
    what was given; the values are kept in their checked form (ints as
    ``int``, the columns, row ids and joined columns as tuples). What only
    the dataset knows (that the columns exist) is checked by the Loader,
    and what only Go knows (a shuffle mode, a transform spec, its own
    ranges) when the Loader asks Go (``loader.Config.Validate``)::

        >>> s = LoaderSettings(columns="n", batch_size=np.int64(8))
        >>> s.columns, s.batch_size
        (('n',), 8)
        >>> LoaderSettings(batch_size="8")
        Traceback (most recent call last):
        loch.errors.InvalidArgument: batch_size='8': want an int, got str
        >>> import dataclasses
        >>> dataclasses.replace(s, rank=1, world_size=2).rank
        1
    """

    columns: Sequence[str] | None = None
    batch_size: int = 32
    shuffle: bool | str = False
    seed: int = 0
    epoch: int = 0
    drop_last: bool = False
    rank: int = 0
    world_size: int = 1
    rows: Sequence[int] | None = None
    joined: Sequence[Mapping[str, Any]] | None = None
    query: str | None = None
    transform: Transform | None = None
    sample_transform: Callable[[Batch], Batch] | None = None
    encoded: Sequence[str] | None = None
    prefetch_batches: int | None = None
    prefetch_bytes: int | None = None
    workers: int | None = None
    fetch_concurrency: int | None = None
    window_rows: int | None = None
    skip_bad_samples: bool = False
    cache_dir: str | None = None
    cache_bytes: int | None = None
    split: tuple[int, int] | None = None
    allow_version_change: bool = False
    epochs: Epochs | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """Checks every option and keeps its checked form."""
        checked: dict[str, Any] = {
            "columns": _columns_option(self.columns),
            "shuffle": _shuffle_option(self.shuffle),
            "rows": None if self.rows is None else tuple(int(r) for r in self.rows),
            "joined": tuple(dict(j) for j in self.joined) if self.joined else None,
            "query": None if self.query is None else str(self.query),
            "transform": _transform_option(self.transform),
            "sample_transform": _sample_transform_option(self.sample_transform),
            "encoded": _encoded_option(self.encoded),
            "cache_dir": None if self.cache_dir is None else str(self.cache_dir),
            "split": None if self.split is None else (int(self.split[0]), int(self.split[1])),
        }
        checked["rank"], checked["world_size"] = _rank_option(self.rank, self.world_size)
        checked["batch_size"] = int_option("batch_size", self.batch_size)
        checked["seed"] = int_option("seed", self.seed, low=0, high=1 << 64)  # Go's is a uint64
        checked["epoch"] = int_option("epoch", self.epoch)
        for name in ("drop_last", "skip_bad_samples", "allow_version_change"):
            checked[name] = _bool_option(name, getattr(self, name))
        for name in _OPTIONAL_INTS:
            checked[name] = _optional_int(name, getattr(self, name))
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def go_config(self, columns: Sequence[str], transforms: Mapping[str, str] | None) -> dict[str, Any]:
        """The Go loader's configuration (loch_loader_new's JSON object,
        without its epoch) of these settings over ``columns`` (the
        dataset's, resolved) with the Go ``transforms`` by column; the
        options left unset are left out, for Go's defaults."""
        config: dict[str, Any] = {
            "columns": list(columns),
            "batch_size": self.batch_size,
            "shuffle": _shuffle_mode(self.shuffle),
            "seed": self.seed,
            "world_size": self.world_size,
            "rank": self.rank,
            "drop_last": self.drop_last,
            "skip_bad_samples": self.skip_bad_samples,
        }
        if self.allow_version_change:
            config["allow_version_change"] = True
        for key, value in (
            ("rows", None if self.rows is None else list(self.rows)),
            ("joined", None if self.joined is None else [dict(j) for j in self.joined]),
            ("query", self.query),
            *((name, getattr(self, name)) for name in _OPTIONAL_INTS),
            ("transforms", dict(transforms) if transforms else None),
            ("encoded", list(self.encoded) if self.encoded else None),
            ("cache_dir", self.cache_dir),
            ("split", None if self.split is None else split_config(self.split)),
        ):
            if value is not None:
                config[key] = value
        return config


# The options that are None (the Go loader's default) or an int, in the
# order of the Go configuration.
_OPTIONAL_INTS = ("prefetch_batches", "prefetch_bytes", "workers", "fetch_concurrency", "window_rows", "cache_bytes")


def _transform_option(transform: Any) -> Transform | None:
    """The transform option: a callable, a spec string or None as given, a
    mapping of columns to specs as a dict (Go checks the specs)."""
    if transform is None or callable(transform) or isinstance(transform, str):
        return transform  # type: ignore[no-any-return]
    return dict(transform)


def _encoded_option(encoded: Any) -> tuple[str, ...] | None:
    """The encoded option: None, or the png/jpeg columns to deliver as
    their stored bytes (a name or names; whether they are such columns is
    the loader's to check); an empty list is None."""
    if encoded is None or (isinstance(encoded, Sequence) and not isinstance(encoded, str | bytes) and not encoded):
        return None
    names = [encoded] if isinstance(encoded, str) else encoded
    if not isinstance(names, Sequence) or isinstance(names, bytes) or not all(isinstance(c, str) for c in names):
        raise InvalidArgument(f"encoded={encoded!r}: want a column name or a list of them")
    return tuple(names)


def _sample_transform_option(fn: Any) -> Callable[[Batch], Batch] | None:
    """The sample_transform option, refused unless a callable or None."""
    if fn is not None and not callable(fn):
        raise InvalidArgument(f"sample_transform={fn!r}: want a callable")
    return fn  # type: ignore[no-any-return]


def _shuffle_mode(shuffle: bool | str | None) -> Any:
    """The Go shuffle mode: True is the Go loader's default mode, False
    "none"; anything else is passed through for Go to check ("none",
    "block" or "full")."""
    if shuffle is True:
        return ""
    if shuffle is False or shuffle is None:
        return "none"
    return shuffle


def int_option(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """``value`` of the option ``name`` as an int, refused with
    :class:`loch.InvalidArgument` (naming the option, what it takes and
    what was given) unless it is an int (a numpy integer too; not a bool),
    and, where given, ``low <= value < high`` (else within Go's int64). Checked here, before the
    configuration goes to Go, whose JSON decoding would name its own
    structs instead; the ranges Go checks itself (loader.Config.Validate)
    are left to it."""
    want = "an int"
    if high is not None:
        want = f"an int in [{low or 0}, {_bound(high)})"
    elif low is not None:
        want = f"an int >= {low}"
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise InvalidArgument(f"{name}={value!r}: want {want}, got {type(value).__name__}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v >= high):
        raise InvalidArgument(f"{name}={v}: want {want}")
    if high is None and not -(1 << 63) <= v < 1 << 63:  # Go's int64 (its own bound, if any, is lower)
        raise InvalidArgument(f"{name}={v}: want an int in [{'-2**63' if low is None else low}, 2**63)")
    return v


def _bound(n: int) -> str:
    """A bound of a range as written in a message: a large power of two as
    one (``2**64``)."""
    return f"2**{n.bit_length() - 1}" if n > 1 << 32 and n & (n - 1) == 0 else str(n)


def _optional_int(name: str, value: Any) -> int | None:
    """An option that is None (the Go loader's default) or an int."""
    return None if value is None else int_option(name, value)


def _bool_option(name: str, value: Any) -> bool:
    """``value`` of the option ``name``, refused unless a bool (a truthy
    string such as "no" must not mean yes)."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidArgument(f"{name}={value!r}: want True or False, got {type(value).__name__}")
    return bool(value)


def _rank_option(rank: Any, world_size: Any) -> tuple[int, int]:
    """(rank, world_size) checked: ints, ``world_size >= 1`` (Go would
    take 0 for its default, 1); Go checks the rank's range."""
    return int_option("rank", rank), int_option("world_size", world_size, low=1)


def _columns_option(columns: Any) -> tuple[str, ...] | None:
    """The columns option: all (None), one (a str) or those named (a
    sequence of str, not empty). Whether the dataset has them is the
    loader's to check."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [columns]
    elif not isinstance(columns, Sequence) or isinstance(columns, bytes):
        raise InvalidArgument(
            f"columns={columns!r}: want a column name or a list of them, got {type(columns).__name__}"
        )
    if not columns:
        raise InvalidArgument(
            f"columns={columns!r}: name at least one column (or leave columns out, or None, to load them all)"
        )
    for c in columns:
        if not isinstance(c, str):
            raise InvalidArgument(f"columns={columns!r}: want column names (str), got {type(c).__name__} {c!r}")
    return tuple(columns)


def _shuffle_option(shuffle: Any) -> bool | str | None:
    """The shuffle option, refused unless a bool, None or a mode string
    (which Go checks)."""
    if shuffle is None or isinstance(shuffle, bool | np.bool_ | str):
        return bool(shuffle) if isinstance(shuffle, np.bool_) else shuffle
    raise InvalidArgument(
        f"shuffle={shuffle!r}: want True, False or a mode ('none', 'block', 'full'), got {type(shuffle).__name__}"
    )


def check_keywords(method: str, kwargs: Mapping[str, Any], options: type) -> None:
    """Raises TypeError, as Python does for an unknown keyword argument but
    naming the public method the user called (``method``, e.g.
    ``"ds.numpy()"``) and the closest known names, for a keyword that
    neither ``options`` (the method's TypedDict of keywords) nor
    :class:`LoaderOptions` has (those an adapter sets itself it refuses
    with its own message)::

        >>> check_keywords("ds.numpy()", {"batch_sise": 8}, LoaderOptions)
        Traceback (most recent call last):
        TypeError: ds.numpy() got an unexpected keyword argument 'batch_sise' (did you mean 'batch_size'?)
    """
    known = set(getattr(options, "__optional_keys__", ())) | set(getattr(options, "__required_keys__", ()))
    known |= set(LoaderOptions.__optional_keys__)
    for key in kwargs:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{method} got an unexpected keyword argument {key!r}{hint}")


#: The keyword arguments that ``ds.pytorch()`` and ``ds.jax()`` take
#: besides :class:`CommonLoaderOptions` (those of :class:`loch.torch.TorchLoader`
#: and :class:`loch.jax.JaxLoader`), with their annotations and defaults:
#: what :func:`loch.loader.keyword_signature` shows for them without importing torch or
#: jax. A test keeps them in step with the adapters' own ``__init__``.
ADAPTER_KEYWORDS: dict[str, dict[str, tuple[str, Any]]] = {
    "pytorch": {
        "pin_memory": ("bool", False),
        "device": ("str | torch.device | None", None),
        "distributed": ("bool | Sequence[int] | None", None),
        "decode": ("str", "cpu"),
    },
    "jax": {
        "sharding": ("jax.sharding.Sharding | None", None),
        "device": ("jax.Device | str | None", None),
        "distributed": ("bool | Sequence[int] | None", None),
        "decode": ("str", "cpu"),
    },
}

#: The options an adapter sets itself (from ``distributed=`` and its
#: DataLoader workers): in :class:`LoaderOptions`, not in :class:`CommonLoaderOptions`.
ADAPTER_SETS = ("rank", "world_size", "split", "epochs")


def go_checked(config: Mapping[str, Any]) -> dict[str, Any]:
    """Checks a Go loader configuration with Go's own checks
    (loader.Config.Validate, through loch_loader_config), raising
    :class:`loch.InvalidArgument` with Go's message naming the setting, and
    returns it with Go's defaults filled in. Through the loader service:
    a loader object made for each epoch is checked just before its loader
    starts, whose workers a call into Go from this thread would leave a
    Go processor short (see :class:`loch._stream.GoLoader`)."""
    result: dict[str, Any] = library().request("loader_config", config=config)
    return result


def split_config(split: tuple[int, int]) -> dict[str, int]:
    """A split argument as the Go loader's configuration holds it."""
    index, count = split
    return {"index": int(index), "count": int(count)}
