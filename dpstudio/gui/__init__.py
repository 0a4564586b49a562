"""The desktop application: the only package that imports PySide6 / pyqtgraph.

Everything here is a view over :class:`dpstudio.gui.session.Session`, which holds the one
Recipe; long work runs on :mod:`dpstudio.gui.workers`.
"""
