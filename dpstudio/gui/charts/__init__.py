"""Live preview charts (pyqtgraph) for the budget page; computations live in ``preview``."""
