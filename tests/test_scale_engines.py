"""One release, three engines (issue 20): in memory, streamed in blocks, and on a Dask cluster.

With a fixed seed the three write the same bytes (the block is the unit of randomness and every
private statistic is an exact, mergeable summary); with different seeds their outputs follow the
same distribution; what cannot stream is refused before anything is read or spent; the ledger
records a streamed release like any other, and recognises its rows by the same sketch."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main
from dpstudio.errors import UserError
from dpstudio.ledger import Ledger
from dpstudio.pipeline import execute_release
from dpstudio.recipe.model import load_recipe


def _table(n: int = 3000, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    income = rng.normal(5e4, 1e4, n).round(2)
    income[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "age": age,
            "income": income,
            "sex": rng.choice(["F", "M"], n),
            "edu": rng.choice(["hs", "ba", "ma", "phd", "025"], n),
            "region": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "y": rng.choice(["0", "1"], n),
        }
    )


def _init(tmp: Path, data: Path, name: str, *extra: str, seed: int | None = 7) -> Path:
    recipe = tmp / f"{name}.json"
    args = ["recipe", "init", str(data), "-o", str(recipe), "--role", "id=identifier", "--confirm-inferred"]
    args += [*extra] + (["--seed", str(seed)] if seed is not None else [])
    assert main(args) == 0
    return recipe


RECORD = [
    "--release", "record", "--epsilon", "2", "--role", "y=sensitive", "--role", "age=sensitive",
    "--role", "income=sensitive", "--role", "edu=sensitive", "--bounds", "age=18:90",
    "--bounds", "income=0:100000", "--categories", "sex=F,M", "--categories", "y=0,1",
    "--categories", "edu=hs,ba,ma,phd,025", "--categories", "region=dp",
]  # fmt: skip
SYNTH = [
    "--release", "synthetic", "--synth", "aim", "--epsilon", "1", "--role", "y=label",
    "--bounds", "age=18:90", "--bounds", "income=0:100000", "--categories", "sex=F,M",
    "--categories", "y=0,1", "--categories", "edu=hs,ba,ma,phd,025", "--categories", "region=dp",
]  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scale")
    df = _table()
    df.to_csv(tmp / "t.csv", index=False)
    df.to_parquet(tmp / "t.parquet", row_group_size=1000)  # three row groups: blocks of 700 rows span them
    return tmp


@pytest.fixture(scope="module")
def scheduler():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _release(recipe: Path, out: Path, engine: str, scheduler=None, ledger=None, block_rows=700, **kw):
    return execute_release(
        load_recipe(recipe),
        output_path=out,
        ledger=ledger,
        engine=engine,
        scheduler=scheduler if engine == "dask" else None,
        block_rows=block_rows,
        recipe_path=recipe,
        **kw,
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("kind", ["record", "synthetic"])
def test_a_fixed_seed_gives_the_same_bytes_in_memory_streamed_and_on_dask(files, tmp_path, scheduler, fmt, kind):
    recipe = _init(tmp_path, files / f"t.{fmt}", kind, *(RECORD if kind == "record" else SYNTH))
    outs, totals = {}, {}
    for engine in ("memory", "stream", "dask"):
        out = tmp_path / f"{engine}.csv"
        result = _release(recipe, out, engine, scheduler)
        outs[engine] = out.read_bytes()
        totals[engine] = (result.recorded_total.epsilon, result.recorded_total.delta, result.plan.total.epsilon)
    assert outs["memory"] == outs["stream"] == outs["dask"]
    assert totals["memory"] == totals["stream"] == totals["dask"]  # the same accounting
    released = pd.read_csv(tmp_path / "stream.csv")
    assert len(released) == 3000 and "id" not in released.columns


def test_the_blocks_draw_independent_noise(files, tmp_path):
    """Two blocks never reuse a stream: the noise of row i and row i + block is not the same."""
    recipe = _init(tmp_path, files / "t.parquet", "r", *RECORD, "--no-clamp")
    out = tmp_path / "o.csv"
    _release(recipe, out, "stream", block_rows=1000)
    raw, rel = _table(), pd.read_csv(out)
    # age gets integer Laplace noise (not clamped here, so the difference is the noise itself):
    # a stream shared by two blocks would give their rows the same noise, row for row
    noise = rel["age"].to_numpy() - raw["age"].to_numpy()
    assert np.count_nonzero(noise) > 500  # there is noise to compare
    assert np.mean(noise[:1000] == noise[1000:2000]) < 0.5


def test_every_engine_draws_from_the_same_distribution(files, tmp_path, scheduler):
    """Different seeds, so different noise: the three engines' outputs follow one distribution."""
    from scipy.stats import ks_2samp

    outs = {}
    for engine, seed in (("memory", 11), ("stream", 12), ("dask", 13)):
        recipe = _init(tmp_path, files / "t.csv", engine, *RECORD, seed=seed)
        _release(recipe, tmp_path / f"{engine}.csv", engine, scheduler, block_rows=None)
        outs[engine] = pd.read_csv(tmp_path / f"{engine}.csv")
    a = outs["memory"]
    for engine in ("stream", "dask"):
        b = outs[engine]
        assert not a["income"].equals(b["income"])  # not the same draws
        for col in ("age", "income"):
            assert ks_2samp(a[col], b[col]).pvalue > 1e-3, (engine, col)
        for col in ("edu", "y"):
            pa = a[col].astype(str).value_counts(normalize=True)
            pb = b[col].astype(str).value_counts(normalize=True)
            assert (pa - pb).abs().max() < 0.05, (engine, col)


def test_the_ledger_records_a_streamed_release_and_knows_its_rows(files, tmp_path):
    ledger = Ledger(tmp_path / "l.sqlite")
    recipe = _init(tmp_path, files / "t.csv", "r", *RECORD)
    first = _release(recipe, tmp_path / "a.csv", "stream", ledger=ledger)
    spent = first.plan.total.epsilon  # the typed 2, plus the DP category estimate of a record release
    assert first.ledger_recorded and first.recorded_total.epsilon == pytest.approx(spent)
    assert first.ledger_after["spent"]["epsilon"] == pytest.approx(spent)
    # one record edited: a new file, the same dataset (found by its rows, streamed)
    edited = _table()
    edited.loc[5, "age"] = 33
    edited.to_csv(tmp_path / "edited.csv", index=False)
    recipe2 = _init(tmp_path, tmp_path / "edited.csv", "r2", *RECORD)
    second = _release(recipe2, tmp_path / "b.csv", "stream", ledger=ledger)
    assert second.ledger_identity["dataset"] == first.ledger_identity["dataset"]
    assert second.ledger_after["spent"]["epsilon"] == pytest.approx(2 * spent)


def test_a_file_that_changes_between_the_passes_is_not_released_nor_charged(files, tmp_path):
    data = tmp_path / "t.csv"
    data.write_bytes((files / "t.csv").read_bytes())
    ledger = Ledger(tmp_path / "l.sqlite")
    recipe = _init(tmp_path, data, "r", *RECORD)
    touched = []

    def progress(fraction, message=""):
        if "perturbed" in message and not touched:
            with open(data, "a") as fh:
                fh.write("9999,40,50000,F,hs,north,1\n")
            touched.append(True)

    with pytest.raises(UserError, match="changed while"):
        _release(recipe, tmp_path / "o.csv", "stream", ledger=ledger, progress=progress)
    assert touched and not (tmp_path / "o.csv").exists()
    assert all(d["releases"] == 0 and d["spent"]["epsilon"] == 0 for d in ledger.datasets())
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".dpstmp")] == []


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (["--release", "synthetic", "--synth", "pearl", "--role", "y=label"], "trains on the rows"),
        (
            [
                "--release",
                "model",
                "--role",
                "y=label",
                "--role",
                "sex=ignore",
                "--role",
                "edu=ignore",
                "--role",
                "region=ignore",
            ],
            "needs the whole table",
        ),
    ],
)
def test_what_cannot_stream_is_refused_before_reading(files, tmp_path, extra, why):
    common = ["--bounds", "age=18:90", "--bounds", "income=0:100000", "--categories", "sex=F,M"]
    common += [
        "--categories",
        "y=0,1",
        "--categories",
        "edu=hs,ba,ma,phd,025",
        "--categories",
        "region=north,south,east,west",
    ]
    recipe = _init(tmp_path, files / "t.csv", "r", *extra, *common, "--epsilon", "1")
    ledger = Ledger(tmp_path / "l.sqlite")
    out = tmp_path / ("o.json" if "model" in extra else "o.csv")
    with pytest.raises(UserError, match=why):
        _release(recipe, out, "stream", ledger=ledger)
    assert not out.exists() and ledger.datasets() == []


def test_a_spreadsheet_cannot_be_streamed(tmp_path):
    _table(50).drop(columns=["income"]).to_excel(tmp_path / "t.xlsx", index=False)
    recipe = _init(
        tmp_path, tmp_path / "t.xlsx", "r", "--release", "record", "--epsilon", "1", "--categories", "sex=F,M",
        "--categories", "y=0,1", "--categories", "edu=hs,ba,ma,phd,025",
        "--categories", "region=north,south,east,west", "--bounds", "age=18:90",
    )  # fmt: skip
    with pytest.raises(UserError, match="cannot be read in blocks"):
        _release(recipe, tmp_path / "o.csv", "stream")


def test_a_streamed_release_writes_csv_tsv_or_parquet_only(files, tmp_path):
    recipe = _init(tmp_path, files / "t.csv", "r", *RECORD)
    with pytest.raises(UserError, match="streamed release writes"):
        _release(recipe, tmp_path / "o.xlsx", "stream")
    _release(recipe, tmp_path / "o.parquet", "stream")
    assert len(pd.read_parquet(tmp_path / "o.parquet")) == 3000


def test_the_cli_runs_each_engine_and_says_where(files, tmp_path, scheduler, capsys):
    recipe = _init(tmp_path, files / "t.parquet", "r", *RECORD)
    capsys.readouterr()
    for engine, words in (("stream", "streamed on this computer"), ("dask", "Dask cluster")):
        args = ["release", str(recipe), "--output", str(tmp_path / f"{engine}.csv"), "--engine", engine]
        args += ["--no-ledger", "--report", str(tmp_path / f"{engine}.html")]
        if engine == "dask":
            args += ["--scheduler", scheduler]
        assert main(args) == 0
        summary = json.loads(capsys.readouterr().out)
        assert words in summary["engine"]
        html = (tmp_path / f"{engine}.html").read_text()
        assert "Where it ran" in html and words in html
        assert "3,000 rows" in html


def test_an_empty_table_is_refused_by_every_engine_before_anything_is_spent(tmp_path):
    df = _table(10).iloc[:0]
    df.to_parquet(tmp_path / "e.parquet")
    _table(10).to_parquet(tmp_path / "full.parquet")
    recipe = _init(
        tmp_path, tmp_path / "full.parquet", "r", *RECORD[:-2], "--categories", "region=north,south,east,west"
    )
    r = load_recipe(recipe)
    from dataclasses import replace

    r = replace(r, input=replace(r.input, path=str(tmp_path / "e.parquet"), sha256=None))
    ledger = Ledger(tmp_path / "l.sqlite")
    for engine in ("memory", "stream"):
        with pytest.raises(UserError, match="no data rows"):
            execute_release(r, output_path=tmp_path / "o.csv", engine=engine, ledger=ledger)
    assert not (tmp_path / "o.csv").exists() and ledger.datasets() == []


def test_the_demo_recipe_streams_to_the_same_bytes(tmp_path):
    """The demo declares yes/no and 0/1 columns boolean: a streamed read keeps them as the loader
    reads them (a boolean read type would fail on "yes")."""
    from dataclasses import replace

    from tests.conftest import DEMO

    r = load_recipe(DEMO.with_name("census_demo.recipe.json"))
    r = replace(r, input=replace(r.input, path=str(DEMO)), randomness=replace(r.randomness, seed=5))
    outs = []
    for engine in ("memory", "stream"):
        execute_release(r, output_path=tmp_path / f"{engine}.csv", engine=engine, block_rows=1000)
        outs.append((tmp_path / f"{engine}.csv").read_bytes())
    assert outs[0] == outs[1]


def test_recipe_init_samples_a_file_too_large_to_load(files, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPSTUDIO_LARGE_FILE_BYTES", "1000")
    recipe = _init(tmp_path, files / "t.csv", "r", *RECORD)
    assert "too large to load whole" in capsys.readouterr().err
    r = load_recipe(recipe)
    from dpstudio.engine.data.loader import fingerprint

    assert r.input.sha256 == fingerprint(files / "t.csv")  # the whole file's hash, not the sample's
    result = _release(recipe, tmp_path / "o.csv", "stream")
    assert result.rows == 3000 and len(pd.read_csv(tmp_path / "o.csv")) == 3000


def test_a_partitioned_parquet_dataset_is_written_atomically_and_recorded(files, tmp_path, scheduler):
    from dpstudio.export import output_sha256

    ledger = Ledger(tmp_path / "l.sqlite")
    recipe = _init(tmp_path, files / "t.parquet", "r", *RECORD)
    single = tmp_path / "single.parquet"
    _release(recipe, single, "stream", block_rows=1000)
    for engine in ("stream", "dask"):
        folder = tmp_path / f"ds_{engine}"
        result = _release(recipe, f"{folder}/", engine, scheduler, ledger=ledger, block_rows=1000)
        parts = sorted(p.name for p in folder.iterdir())
        assert parts == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
        # the same rows as the single file (same seed, same blocks)
        assert pd.read_parquet(folder).equals(pd.read_parquet(single))
        assert result.output_sha256 == output_sha256(folder)
    assert ledger.verify() == []
    (folder / "part-00001.parquet").write_bytes(b"changed")
    assert any("changed since the release" in p for p in ledger.verify())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporaries left


def test_a_dataset_folder_is_never_written_over_nor_written_in_memory(files, tmp_path):
    recipe = _init(tmp_path, files / "t.parquet", "r", *RECORD)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    ledger = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(UserError, match="already exists"):
        _release(recipe, f"{taken}/", "stream", ledger=ledger)
    assert [p.name for p in taken.iterdir()] == ["keep.txt"] and ledger.datasets() == []
    with pytest.raises(UserError, match="engine stream"):
        _release(recipe, f"{tmp_path / 'new'}/", "memory", ledger=ledger)
    assert not (tmp_path / "new").exists() and ledger.datasets() == []


def test_dask_reads_a_folder_of_parquet_files(files, tmp_path, scheduler):
    """A dataset split over several files (a glob the workers read) releases as the one file
    holding the same rows: the blocks are cut by row position across the files."""
    from dataclasses import replace

    whole = pd.read_parquet(files / "t.parquet")
    folder = tmp_path / "parts"
    folder.mkdir()
    whole.iloc[:1300].to_parquet(folder / "a.parquet")
    whole.iloc[1300:].to_parquet(folder / "b.parquet")
    recipe = _init(tmp_path, files / "t.parquet", "r", *RECORD)
    _release(recipe, tmp_path / "one.csv", "stream", block_rows=1000)
    r = load_recipe(recipe)
    # a folder's identity is the hash of its files' names and hashes, not the one file's
    with pytest.raises(UserError, match="not the file this recipe was made for"):
        execute_release(
            r, output_path=tmp_path / "x.csv", input_path=str(folder / "*.parquet"), engine="dask",
            scheduler=scheduler, block_rows=1000,
        )  # fmt: skip
    r = replace(r, input=replace(r.input, sha256=None))
    result = execute_release(
        r, output_path=tmp_path / "many.csv", input_path=str(folder / "*.parquet"), engine="dask",
        scheduler=scheduler, block_rows=1000,
    )  # fmt: skip
    assert result.rows == 3000
    assert (tmp_path / "many.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()


def test_a_cluster_release_never_writes_over_or_into_its_input_folder(files, tmp_path, scheduler):
    from dataclasses import replace

    folder = tmp_path / "parts"
    folder.mkdir()
    whole = pd.read_parquet(files / "t.parquet")
    whole.iloc[:1500].to_parquet(folder / "a.parquet")
    whole.iloc[1500:].to_parquet(folder / "b.parquet")
    before = (folder / "b.parquet").read_bytes()
    r = load_recipe(_init(tmp_path, files / "t.parquet", "r", *RECORD))
    r = replace(r, input=replace(r.input, sha256=None))
    for out, report in ((folder / "b.parquet", None), (tmp_path / "o.csv", folder / "report.html")):
        with pytest.raises(UserError, match="input's"):
            execute_release(
                r, output_path=out, report_path=report, input_path=str(folder / "*.parquet"), engine="dask",
                scheduler=scheduler,
            )  # fmt: skip
    assert (folder / "b.parquet").read_bytes() == before and sorted(p.name for p in folder.iterdir()) == [
        "a.parquet",
        "b.parquet",
    ]


def test_the_checks_that_depend_on_n_count_every_row(tmp_path):
    """delta must be below 1/n: a streamed release counts n, not the first block's rows."""
    n = 12_000
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.uniform(0, 1, n), "y": rng.choice(["a", "b"], n)}).to_parquet(tmp_path / "t.parquet")
    args = ["--release", "record", "--epsilon", "1", "--delta", str(1 / 11_000), "--bounds", "x=0:1"]
    args += ["--mechanism", "x=gaussian", "--categories", "y=a,b", "--role", "x=sensitive"]
    recipe = tmp_path / "r.json"
    main(["recipe", "init", str(tmp_path / "t.parquet"), "-o", str(recipe), "--confirm-inferred", *args])
    for engine in ("memory", "stream"):
        with pytest.raises(Exception, match="1/n"):
            execute_release(load_recipe(recipe), output_path=tmp_path / f"{engine}.csv", engine=engine)


def test_a_report_is_never_written_into_the_output_dataset(files, tmp_path):
    recipe = _init(tmp_path, files / "t.parquet", "r", *RECORD)
    # the dataset's folder must be new, so a report inside it is refused before anything is read
    with pytest.raises(UserError, match="into the output dataset's folder|folder of the report does not exist"):
        _release(recipe, f"{tmp_path / 'out'}/", "stream", report_path=tmp_path / "out" / "report.html")
    assert not (tmp_path / "out").exists()


def test_public_columns_keep_their_declared_type_in_every_engine(tmp_path):
    """An integer column with one empty cell in a later block: the same text from every engine."""
    df = _table(2000)
    df["visits"] = np.arange(2000) % 7
    df = df.astype({"visits": "float64"})
    df.loc[1500, "visits"] = np.nan
    df.to_csv(tmp_path / "t.csv", index=False)
    recipe = _init(tmp_path, tmp_path / "t.csv", "r", *RECORD, "--type", "visits=integer", "--role", "visits=public")
    outs = []
    for engine in ("memory", "stream"):
        _release(recipe, tmp_path / f"{engine}.csv", engine)
        outs.append((tmp_path / f"{engine}.csv").read_bytes())
    assert outs[0] == outs[1]
    visits = pd.read_csv(tmp_path / "stream.csv")["visits"]
    assert visits.isna().sum() == 1 and visits.dropna().eq(visits.dropna().round()).all()
    assert b"3.0," not in outs[0]  # whole numbers are written as whole numbers


def test_a_streamed_synthetic_release_counts_the_rows_it_read(files, tmp_path):
    recipe = _init(tmp_path, files / "t.parquet", "s", *SYNTH)
    result = _release(recipe, tmp_path / "o.csv", "stream", report_path=tmp_path / "o.html")
    assert result.rows == 3000 and "(3,000 rows read)" in result.engine
    assert "(0 rows)" not in (tmp_path / "o.html").read_text()


def test_the_sketch_spills_beside_the_ledger_and_a_killed_runs_spill_is_removed(files, tmp_path):
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    ledger = Ledger(tmp_path / "l.sqlite")
    root = Path(f"{ledger.path}.sketch-spill")
    root.mkdir(mode=0o700)
    orphan = root / f"dpstudio-sketch-{dead_pid}-abc"
    orphan.mkdir()
    (orphan / "000").write_bytes(b"12345678")
    sketcher = ledger.row_sketcher()
    assert not orphan.exists() and oct(root.stat().st_mode & 0o777) == "0o700"
    sketcher.close()


def test_a_streamed_synthetic_report_points_to_no_missing_section(files, tmp_path):
    recipe = _init(tmp_path, files / "t.parquet", "s", *SYNTH)
    _release(recipe, tmp_path / "o.csv", "stream", report_path=tmp_path / "o.html")
    html = (tmp_path / "o.html").read_text()
    assert "Utility of the released data" not in html and "written block by block" in html


@pytest.mark.parametrize("kind", ["record", "synthetic"])
def test_dask_merges_many_partitions_on_the_workers_to_the_streamed_bytes(files, tmp_path, scheduler, kind):
    """A file of ten row groups (ten partitions): the domain estimates' summaries and the
    marginal counts are merged on the workers, in a tree, each partition read in slices of a
    block; the first rows come from the leading partitions.  The release is the streamed one,
    byte for byte."""
    whole = pd.read_parquet(files / "t.parquet")
    data = tmp_path / "groups.parquet"
    whole.to_parquet(data, row_group_size=300)
    recipe = _init(tmp_path, data, kind, *(RECORD if kind == "record" else SYNTH))
    outs = {}
    for engine in ("stream", "dask"):
        out = tmp_path / f"{engine}.csv"
        _release(recipe, out, engine, scheduler, block_rows=128)
        outs[engine] = out.read_bytes()
    assert outs["stream"] == outs["dask"]
    assert len(pd.read_csv(tmp_path / "dask.csv")) == 3000


class _SyncClient:
    """What the cluster engine asks of a Dask client, computed in this process."""

    def compute(self, tasks, sync=True):
        import dask

        if isinstance(tasks, list):
            return list(dask.compute(*tasks, scheduler="sync"))
        return dask.compute(tasks, scheduler="sync")[0]


def test_the_first_rows_are_read_from_the_leading_partitions_only():
    """Reading the first 1,000 rows reads the partitions that hold them, not the whole table
    (which held every partition in the workers' memory at once: 1.7 GB at 10M rows)."""
    dd = pytest.importorskip("dask.dataframe")
    from dpstudio.pipeline.cluster import first_rows

    table = _table(2000)
    read: list[int] = []

    def part(i: int) -> pd.DataFrame:
        read.append(i)
        return table.iloc[i * 400 : (i + 1) * 400].reset_index(drop=True)

    ddf = dd.from_map(part, range(5), meta=table.iloc[:0], enforce_metadata=False)
    got = first_rows(_SyncClient(), ddf, [400] * 5, 1000)
    assert sorted(read) == [0, 1, 2]
    read.clear()
    everything = ddf.head(1000, npartitions=-1, compute=False).compute(scheduler="sync")  # what it replaces
    assert sorted(read) == [0, 1, 2, 3, 4]
    pd.testing.assert_frame_equal(got, everything)
    assert got["age"].tolist() == table["age"].iloc[:1000].tolist()
    read.clear()
    assert len(first_rows(_SyncClient(), ddf, [400] * 5, 5000)) == 2000 and sorted(read) == [0, 1, 2, 3, 4]


def test_summaries_merged_in_a_tree_equal_the_fold_in_table_order():
    """The tree of merges on the workers gives the summary of one pass in table order, down to
    the order of the values (partition selection draws its noise in that order)."""
    pytest.importorskip("dask")
    from dask import delayed

    from dpstudio.pipeline.cluster import _merge_dicts, _reduce_on_workers
    from dpstudio.plan.domains import CategorySummary

    values = pd.Series(np.random.default_rng(3).choice([f"v{i}" for i in range(40)], 2000))

    def summary(a: int, b: int) -> dict[str, CategorySummary]:
        return {"u": CategorySummary("c", None).add(values.iloc[a:b].to_frame("c"), start=a)}

    cuts = [0, 7, 150, 151, 400, 900, 905, 1300, 1700, 1999, 2000]
    leaves = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    one = CategorySummary("c", None).add(values.to_frame("c"))
    for split in (2, 3, 8):
        got = _reduce_on_workers(_SyncClient(), [delayed(summary)(a, b) for a, b in leaves], _merge_dicts, split)["u"]
        assert list(got.counts.items()) == list(one.counts.items())
        assert got.first == one.first and got.rows == one.rows == 2000


def test_the_cluster_keeps_a_window_of_blocks_reads_each_partition_once_and_releases_all(files, tmp_path):
    """Record blocks on the cluster: in flight never more than the blocks of one partition per
    worker plus one (at least 2 x workers + 2), each partition read once (the client holds its
    read until the last block cut from it is submitted: a scheduler may drop a partition whose
    submitted blocks are all cut, and a later block then read it again), every future released
    once used, and the ones still held released when the release stops (a cancel)."""
    from collections import Counter
    from dataclasses import replace

    dd = pytest.importorskip("dask.dataframe")
    import dask

    from dpstudio.engine.data.schema import infer_schema
    from dpstudio.engine.progress import Cancelled
    from dpstudio.engine.rng import make_random_source
    from dpstudio.pipeline.cluster import _records_on_cluster
    from dpstudio.plan import compile_checked

    i = RECORD.index("region=dp")
    args = RECORD[: i - 1] + RECORD[i + 1 :]  # no domain estimate to run here
    recipe = load_recipe(_init(tmp_path, files / "t.parquet", "r", *args, "--role", "region=ignore"))
    frame = _table()
    plan, problems = compile_checked(recipe, replace(infer_schema(frame), rows=len(frame)))
    assert plan is not None and not problems, problems
    cols = [c.name for c in recipe.columns if c.role not in ("identifier", "ignore")]
    ddf = dd.from_pandas(frame[cols], npartitions=7, sort=False)
    lengths = [len(p) for p in dask.compute(*ddf.to_delayed(), scheduler="sync")]

    class Future:
        """A finished future (the client below runs each task when it is submitted)."""

        def __init__(self, client, value, kind):
            self.client, self.value, self.kind, self.released = client, value, kind, False
            client.live.add(self)
            client.made.append(self)
            blocks = sum(f.kind == "block" for f in client.live)
            client.most = max(client.most, blocks)

        def result(self):
            assert not self.released
            return self.value

        def release(self):
            self.released = True
            self.client.live.discard(self)

    def value(x):
        if isinstance(x, Future):
            assert not x.released, "a task used a future its holder had released"
            return x.value
        return [value(y) for y in x] if isinstance(x, list) else x

    class Client:
        """A client that runs each task at once: the tasks a real cluster keeps or drops are
        the futures this one sees held or released."""

        def __init__(self):
            self.live, self.most, self.made, self.reads = set(), 0, [], Counter()

        def scheduler_info(self):
            return {"workers": {"a": {}, "b": {}}}

        def compute(self, part):  # only partitions are computed whole
            self.reads[part.key] += 1
            return Future(self, dask.compute(part, scheduler="sync")[0], "read")

        def submit(self, fn, *args, pure=True):
            assert pure is False  # a pure key would tokenize the plan for each block
            return Future(self, fn(*[value(a) for a in args]), "block" if fn.__name__ == "_perturb" else "cut")

        def scatter(self, items, broadcast=False, hash=True):
            return [Future(self, x, "shared") for x in items]

    class StopAfter:
        def __init__(self, n):
            self.n = n

        def check(self):
            self.n -= 1
            if self.n < 0:
                raise Cancelled("stopped")

    parts = ddf.to_delayed()

    def run(client, cancel, written):
        return _records_on_cluster(
            client, plan, parts, lengths, 100, {}, False, make_random_source(5), None,
            written.append, lambda *_: None, cancel,
        )  # fmt: skip

    client, written = Client(), []
    outcome = run(client, StopAfter(10**6), written)
    assert len(written) == 30 and outcome.public_stats["rows"] == 3000
    assert client.reads == Counter({p.key: 1 for p in parts})
    window = max(2 * 2 + 2, -(-2 * max(lengths) // 100) + 1)  # 10 of the 30 blocks
    assert client.most == window < 30 and not client.live and all(f.released for f in client.made)
    assert pd.concat(written, ignore_index=True).shape == (3000, len(cols))
    client, written = Client(), []
    with pytest.raises(Cancelled):
        run(client, StopAfter(12), written)
    assert 0 < len(written) < sum(f.kind == "block" for f in client.made) < 30
    assert not client.live and all(f.released for f in client.made)


def test_a_block_cut_on_a_worker_travels_with_its_own_rows_only():
    """A block cut from a partition (a view where pandas pickles slices compactly, else a copy)
    pickles to about its share of the partition: a block moved to the other worker or spilled
    to disk must not carry the whole partition's text buffers with it."""
    from dpstudio.pipeline.cluster import _cut

    part = pd.DataFrame(
        {
            "x": np.arange(400_000, dtype=np.float64),
            "t": pd.Series([f"label-{i % 50}" for i in range(400_000)], dtype="string[pyarrow]"),
        }
    )
    whole = len(pickle.dumps(part, protocol=5))
    block = _cut(part, 100_000, 200_000)
    assert block["x"].iloc[0] == 100_000 and len(block) == 100_000
    assert block["t"].iloc[-1] == f"label-{199_999 % 50}"
    assert len(pickle.dumps(block, protocol=5)) < 0.3 * whole


def test_the_first_rows_of_a_parquet_file_span_its_small_row_groups(tmp_path):
    """The column kinds of a Dask release of one Parquet file come from its first 1,000 rows,
    however small its row groups (a batch of pyarrow's reader ends at a row group's end)."""
    from dpstudio.pipeline.cluster import _first_rows_of_file

    frame = pd.DataFrame({"a": np.arange(2500), "b": ["x"] * 2500})
    frame.to_parquet(tmp_path / "t.parquet", row_group_size=300)
    first = _first_rows_of_file(str(tmp_path / "t.parquet"), ["b", "a"])
    assert list(first.columns) == ["b", "a"] and len(first) == 1000
    assert first["a"].tolist() == list(range(1000))
    frame.iloc[:0].to_parquet(tmp_path / "e.parquet")
    assert len(_first_rows_of_file(str(tmp_path / "e.parquet"), ["a", "b"])) == 0


def test_dask_partitions_and_the_direct_reader_see_one_view_of_na_markers(tmp_path):
    """Text cells that are NA markers ("", "NA", "null") are missing in every pass of a Dask
    release, as in the loader: Dask's own Parquet partitions (the summaries' passes, and every
    pass of a folder or glob) are normalised like the direct row-group reads."""
    dd = pytest.importorskip("dask.dataframe")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpstudio.pipeline.cluster import _normalise, _row_group

    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "s": ["a", "NA", "", "null"]})
    path = tmp_path / "n.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=2)
    parts = dd.read_parquet(str(path), split_row_groups=True).to_delayed()
    for i, part in enumerate(parts):
        via_dask = _normalise(part.compute(scheduler="sync"), {}, False)
        direct = _row_group(str(path), i, ["x", "s"])
        assert via_dask["s"].isna().tolist() == direct["s"].isna().tolist()
        assert via_dask["s"].dropna().tolist() == direct["s"].dropna().tolist()
    assert _row_group(str(path), 0, ["x", "s"])["s"].isna().tolist() == [False, True]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_one_file_has_one_ledger_fingerprint_whichever_engine_reads_it(tmp_path, scheduler, fmt, monkeypatch):
    """The ledger recognises a file by its rows: a date column the loader reads as dates (the
    streamed and Dask readers as text) and text NA markers (missing in the loader, text in Dask's
    Parquet partitions) gave each engine other row hashes, so a copy released by another engine
    escaped the dataset's budget (audit of the column-set sketches, HIGH)."""
    df = _table(600)
    df["visit"] = pd.date_range("2020-01-01", periods=len(df), freq="37h").strftime("%Y-%m-%d %H:%M")
    df.loc[::50, "visit"] = ""
    df.loc[::7, "edu"] = "NA"
    data = tmp_path / f"d.{fmt}"
    df.to_csv(data, index=False) if fmt == "csv" else df.to_parquet(data, row_group_size=250)
    recipe = _init(tmp_path, data, "r", *RECORD, "--role", "visit=ignore")
    led = Ledger(tmp_path / "l.sqlite")
    seen = {}

    class Stop(Exception):
        pass

    def capture(self, sha, **kw):
        seen[engine] = kw["fingerprint"]
        raise Stop

    monkeypatch.setattr(Ledger, "reserve", capture)
    for engine in ("memory", "stream", "dask"):
        with pytest.raises(Stop):
            _release(recipe, tmp_path / f"o-{engine}.csv", engine, scheduler, ledger=led, block_rows=170)
    assert seen["memory"].rows == len(df) and seen["memory"].columns
    assert seen["stream"] == seen["memory"] and seen["dask"] == seen["memory"]
