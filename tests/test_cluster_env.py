"""The local Dask cluster dpstudio starts: its workers get glibc's own malloc thresholds
(cluster.WORKER_MALLOC) even when this process has Dask's default trim value in its environment,
and starting it leaves this process's environment as it was."""

from __future__ import annotations

import os

import pytest


def test_workers_get_the_malloc_settings_and_the_client_keeps_its_environment(monkeypatch):
    pytest.importorskip("distributed")
    from distributed import Client

    from dpstudio.pipeline.cluster import WORKER_MALLOC, local_cluster

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # e.g. left by an earlier default cluster
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    before = dict(os.environ)
    cluster = local_cluster(1)
    try:
        assert dict(os.environ) == before
        with Client(cluster) as client:
            seen = next(iter(client.run(lambda: {k: os.environ.get(k) for k in WORKER_MALLOC}).values()))
        assert seen == WORKER_MALLOC
    finally:
        cluster.close()
