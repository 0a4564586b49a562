"""The numeric engine: numpy/scipy/pandas only; the only code that touches private data.

Nothing under this package may import Qt (tests/test_architecture.py checks it).
"""
