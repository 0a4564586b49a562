"""DP synthetic data: PEARL (Liew et al. 2022), DP-MERF and an MST-style marginal synthesizer.

``SYNTHESIZERS[name]()`` gives a :class:`~.base.Synthesizer`; ``fit(...)`` returns a
:class:`~.base.FittedSynth` whose ``components`` are the Gaussian/selection releases and whose
``privacy_loss()`` is their exact composition.

Imports are lazy: the worker processes that train a generator import only
:mod:`.training` and numpy, not pandas or scipy (see :mod:`.shards`).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import FittedSynth, Synthesizer
    from .encoding import ColumnSpec, Encoder, TableSpec

_LAZY = {
    "ColumnSpec": ".encoding",
    "Encoder": ".encoding",
    "TableSpec": ".encoding",
    "Synthesizer": ".base",
    "FittedSynth": ".base",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _lazy(name: str) -> Callable[..., Synthesizer]:
    def make(*args: Any, **kwargs: Any) -> Synthesizer:
        cls: type[Synthesizer]
        if name == "pearl":
            from .pearl import PearlSynthesizer as cls
        elif name == "merf":
            from .merf import MerfSynthesizer as cls
        elif name == "aim":
            from .aim import AIMSynthesizer as cls
        else:
            from .mst import MSTSynthesizer as cls
        return cls(*args, **kwargs)

    make.__name__ = name
    return make


SYNTHESIZERS: dict[str, Callable[..., Synthesizer]] = {
    "pearl": _lazy("pearl"),
    "merf": _lazy("merf"),
    "mst": _lazy("mst"),
    "aim": _lazy("aim"),
}

__all__ = ["ColumnSpec", "Encoder", "TableSpec", "Synthesizer", "FittedSynth", "SYNTHESIZERS"]
