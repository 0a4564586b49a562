"""Data intake: loading tables from disk and inferring a schema with suggested column roles.

Engine code: numpy / pandas / pyarrow only, never Qt.
"""

from dpstudio.engine.data.loader import SUPPORTED_EXTENSIONS, LoadedTable, fingerprint, load_table
from dpstudio.engine.data.schema import ColumnSchema, TableSchema, infer_schema

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "LoadedTable",
    "fingerprint",
    "load_table",
    "ColumnSchema",
    "TableSchema",
    "infer_schema",
]
