"""The loader methods of a dataset and of a mixture (:meth:`numpy`,
:meth:`pytorch`, :meth:`jax`, :meth:`tensorflow`): the entry points of
:class:`loch.Loader` and of the framework adapters, whose modules (and
frameworks) are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .loader import Loader, LoaderOptions, LoaderSettings, Source, check_keywords, keyword_signature

if TYPE_CHECKING:
    import tensorflow as tf
    from typing_extensions import Unpack

    from .jax import JaxLoader, JaxOptions
    from .torch import TorchLoader, TorchOptions

__all__ = ["LoaderMethods"]


class LoaderMethods:
    """Loaders of ``self``, a :class:`loch.loader.Source` (a
    :class:`loch.Dataset` or a :class:`loch.Mixture`), by framework. Each
    method takes :class:`loch.Loader`'s keyword arguments (a mixture's
    but ``rows``), checked at once: an unknown one raises ``TypeError``
    naming the method as :attr:`_loaders_of` calls it."""

    #: How the methods are named in messages: ``"ds"`` (``ds.numpy()``)
    #: or ``"mixture"``.
    _loaders_of = "ds"

    def _source(self) -> Source:
        """This object as the loaders' source."""
        source: Any = self
        return source  # type: ignore[no-any-return]

    @keyword_signature("numpy")
    def numpy(self, **kwargs: Unpack[LoaderOptions]) -> Loader:
        """A :class:`loch.Loader` streaming batches as dicts of numpy arrays
        (arguments as for :meth:`pytorch`, without the torch ones)."""
        check_keywords(f"{self._loaders_of}.numpy()", kwargs, LoaderOptions)
        return Loader.from_settings(self._source(), LoaderSettings(**kwargs))

    @keyword_signature("pytorch")
    def pytorch(self, **kwargs: Unpack[TorchOptions]) -> TorchLoader:
        """A PyTorch IterableDataset streaming batches as dicts of tensors
        (see :class:`loch.torch.TorchLoader`)::

            >>> for batch in ds.pytorch(batch_size=64, shuffle=True, columns=["camera", "angles"]):  # doctest: +SKIP
            ...     batch["camera"].shape, batch["index"]
        """
        from .torch import TorchLoader, TorchOptions

        check_keywords(f"{self._loaders_of}.pytorch()", kwargs, TorchOptions)
        return TorchLoader(self._source(), **kwargs)

    @keyword_signature("jax")
    def jax(self, **kwargs: Unpack[JaxOptions]) -> JaxLoader:
        """Batches as dicts of jax arrays, optionally placed on a sharding
        (see :class:`loch.jax.JaxLoader`)."""
        from .jax import JaxLoader, JaxOptions

        check_keywords(f"{self._loaders_of}.jax()", kwargs, JaxOptions)
        return JaxLoader(self._source(), **kwargs)

    @keyword_signature("tensorflow")
    def tensorflow(self, **kwargs: Unpack[LoaderOptions]) -> tf.data.Dataset:
        """A ``tf.data.Dataset`` of batches (see :func:`loch.tensorflow.dataset`)."""
        from .tensorflow import dataset

        check_keywords(f"{self._loaders_of}.tensorflow()", kwargs, LoaderOptions)
        return dataset(self._source(), **kwargs)
