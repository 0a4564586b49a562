"""DP synthetic data: PEARL (seed 003), DP-MERF and an MST-style marginal synthesizer.

``SYNTHESIZERS[name]()`` gives a :class:`~.base.Synthesizer`; ``fit(...)`` returns a
:class:`~.base.FittedSynth` whose ``components`` are the Gaussian/selection releases and whose
``privacy_loss()`` is their exact composition.
"""
from .base import FittedSynth, Synthesizer
from .encoding import ColumnSpec, Encoder, TableSpec


def _lazy(name):
    def make(*args, **kwargs):
        if name == "pearl":
            from .pearl import PearlSynthesizer as cls
        elif name == "merf":
            from .merf import MerfSynthesizer as cls
        else:
            from .mst import MSTSynthesizer as cls
        return cls(*args, **kwargs)
    make.__name__ = name
    return make


SYNTHESIZERS = {"pearl": _lazy("pearl"), "merf": _lazy("merf"), "mst": _lazy("mst")}

__all__ = ["ColumnSpec", "Encoder", "TableSpec", "Synthesizer", "FittedSynth", "SYNTHESIZERS"]
