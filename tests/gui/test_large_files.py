"""A file too large for memory (issue 20, item 4): opened from a uniform sample, flagged as such
everywhere, released streamed (every row, in blocks), refused clearly when the release cannot
stream, and the export page writes the recipe and the exact command of a cluster run.

``DPSTUDIO_LARGE_FILE_BYTES`` makes a 5,000-row table "large"."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.gui.conftest import DEMO_CSV, DEMO_RECIPE, load

ROWS = 5000
NOTICE = (
    "Large file: 5,000 rows. Previews and estimates use a uniform sample of {0} rows; "
    "the release reads every row, in blocks."
)


def _table() -> pd.DataFrame:
    """The demo table grown to 5,000 rows (new person ids for the extra rows)."""
    df = pd.read_csv(DEMO_CSV, dtype=str, keep_default_na=False)
    extra = df.iloc[: ROWS - len(df)].copy()
    extra["person_id"] = [f"Q{i:06d}" for i in range(len(extra))]
    return pd.concat([df, extra], ignore_index=True)


def _recipe_json(name: str, fmt: str, options: dict) -> dict:
    """The demo recipe for a copy of its table.  Its yes/no and 0/1 columns are declared as
    categories: a streamed read fixes declared booleans as true/false cells (see the report)."""
    r = json.loads(DEMO_RECIPE.read_text(encoding="utf-8"))
    r["input"] = {"path": name, "format": fmt, "options": options, "sha256": None}
    for c in r["columns"]:
        if c["type"] == "boolean":
            c["type"] = "categorical"
    return r


@pytest.fixture
def large(monkeypatch):
    monkeypatch.setenv("DPSTUDIO_LARGE_FILE_BYTES", "1000")


@pytest.fixture
def big_csv(tmp_path):
    d = tmp_path / "csv data"
    d.mkdir()
    path = d / "people.csv"
    _table().to_csv(path, index=False)
    opts = {"delimiter": ",", "encoding": "utf-8", "header": True, "quotechar": '"'}
    (d / "people.recipe.json").write_text(json.dumps(_recipe_json("people.csv", "csv", opts)), encoding="utf-8")
    return path


@pytest.fixture
def big_parquet(tmp_path):
    d = tmp_path / "pq"
    d.mkdir()
    path = d / "people.parquet"
    df = _table()
    for c in ("age", "education_level", "income"):
        df[c] = df[c].astype("int64")
    df.to_parquet(path, index=False)
    (d / "people.recipe.json").write_text(json.dumps(_recipe_json("people.parquet", "parquet", {})), encoding="utf-8")
    return path


def _pearl(r):
    """The recipe as PEARL synthetic data (a synthesizer needs every column's domain: the
    columns without one are left out)."""
    from dataclasses import replace

    from dpstudio.gui.wizard.edits import set_release_type

    for c in r.columns:
        if c.domain is None and c.role != "identifier":
            r = r.with_column(c.name, role="ignore")
    r = set_release_type(r, "synthetic")
    return replace(r, release=replace(r.release, options=r.release.options.with_(method="pearl")))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- deciding from public facts ----------------------------------------------------------
def test_the_decision_reads_file_size_and_parquet_metadata(big_csv, big_parquet, monkeypatch):
    import pyarrow.parquet as pq

    from dpstudio.engine.data import sample as S

    assert S.estimated_memory(big_csv) == 3 * big_csv.stat().st_size
    meta = pq.ParquetFile(big_parquet).metadata
    raw = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    assert S.estimated_memory(big_parquet) == int(1.5 * max(raw, big_parquet.stat().st_size))
    assert S.available_memory() > 0
    monkeypatch.delenv(S.LARGE_FILE_ENV, raising=False)
    assert S.large_file_limit() == int(0.4 * S.available_memory())
    assert not S.is_large_file(big_csv)  # a few hundred kB fit in any memory
    monkeypatch.setenv(S.LARGE_FILE_ENV, str(S.estimated_memory(big_csv) - 1))
    assert S.is_large_file(big_csv)
    monkeypatch.setenv(S.LARGE_FILE_ENV, str(S.estimated_memory(big_csv)))
    assert not S.is_large_file(big_csv)
    assert not S.is_large_file(big_csv.with_name("missing.csv"))  # the loader says why


# ---- opening: a flagged sample, the whole file's fingerprint and rows ---------------------
@pytest.mark.parametrize("which", ["csv", "parquet"])
def test_a_large_file_opens_as_a_flagged_uniform_sample(qtbot, window, large, big_csv, big_parquet, which):
    path = big_csv if which == "csv" else big_parquet
    load(qtbot, window, path)
    s = window.session
    assert window.data_page.last_error is None, window.data_page.last_error
    assert s.loaded.sample_of == ROWS and s.sample_of == ROWS and s.loaded.is_sample
    assert len(s.frame) == ROWS <= 100_000  # all rows fit in the sample
    assert s.schema.rows == ROWS
    assert s.loaded.sha256 == _sha(path)  # the whole file's fingerprint
    assert s.recipe.input.sha256 == _sha(path)
    assert s.engine == "stream"
    assert s.recipe_source is not None  # the sibling recipe matched the whole file
    page = window.data_page
    assert page.sample_notice.isVisibleTo(page)
    assert page.sample_notice.text() == NOTICE.format("5,000")
    assert "5,000 rows" in page.summary.text() and "in the sample" in page.summary.text()
    assert "uniform sample of 5,000 rows" in page.preview_label.text()
    assert "(sample)" in page.schema_table.horizontalHeaderItem(2).text()


def test_the_sample_is_uniform_in_file_order_and_smaller_than_the_file(qtbot, window, large, big_csv, monkeypatch):
    from dpstudio.engine.data import sample as S

    monkeypatch.setattr(S, "SAMPLE_ROWS", 1000)
    load(qtbot, window, big_csv)
    s = window.session
    assert s.sample_of == ROWS and len(s.frame) == 1000
    assert s.schema.rows == ROWS
    ids = list(_table()["person_id"])
    pos = [ids.index(p) for p in s.frame["person_id"]]
    assert pos == sorted(pos) and len(set(pos)) == 1000  # distinct rows, in file order
    assert 0 < min(pos) < 500 and max(pos) > ROWS - 500  # spread over the whole file
    assert window.data_page.sample_notice.text() == NOTICE.format("1,000")


def test_a_file_that_fits_is_loaded_whole(qtbot, window, big_csv):
    load(qtbot, window, big_csv)
    s = window.session
    assert s.sample_of is None and s.loaded.sample_of is None and s.engine == "memory"
    assert len(s.frame) == ROWS
    assert not window.data_page.sample_notice.isVisibleTo(window.data_page)
    assert "in the sample" not in window.data_page.summary.text()


def test_a_large_excel_file_is_refused_with_what_to_do(qtbot, window, large, tmp_path):
    path = tmp_path / "people.xlsx"
    _table().iloc[:50].to_excel(path, index=False)
    page = window.data_page
    page.load(str(path))
    qtbot.waitUntil(lambda: not page.loading, timeout=120000)
    assert not window.session.has_data
    text = str(page.last_error)
    assert "too large" in text and "Parquet" in text and "people.xlsx" in text


def test_a_saved_recipe_of_a_large_file_opens_its_sample(qtbot, window, large, big_csv):
    load(qtbot, window, big_csv.with_name("people.recipe.json"))
    s = window.session
    assert s.sample_of == ROWS and s.loaded.sha256 == _sha(big_csv)


# ---- the release: streamed, every row ------------------------------------------------------
@pytest.mark.parametrize("which", ["csv", "parquet"])
def test_the_export_runs_streamed_over_every_row(qtbot, window, large, big_csv, big_parquet, tmp_path, which):
    from dpstudio.ledger import Ledger

    path = big_csv if which == "csv" else big_parquet
    load(qtbot, window, path)
    s = window.session
    assert window.go_to(5)
    page = window.export_page
    page.confirm_release = lambda text: True
    out = tmp_path / "released" / "out.csv"
    out.parent.mkdir()
    s.set_targets(output_path=str(out), report_path=str(out.with_name("report.html")))
    assert "reads all its 5,000 rows a part at a time" in page.cost_label.text()
    assert page.start_release() is not None
    qtbot.waitUntil(lambda: page.worker is None, timeout=120000)
    assert page.last_error is None, page.last_error
    result = page.result
    assert result.engine.startswith("streamed")
    assert result.rows == ROWS
    released = pd.read_csv(out)
    assert len(released) == ROWS
    assert "person_id" not in released.columns  # the identifier is dropped, as in memory
    assert result.ledger_recorded
    summary = Ledger().summary(_sha(path))
    assert summary["releases"] == 1
    assert out.with_name("report.html").is_file()


def test_a_synthesizer_that_needs_every_row_disables_export_with_the_reason(qtbot, window, large, big_csv):
    from dataclasses import replace

    load(qtbot, window, big_csv)
    s = window.session
    s.update(_pearl)
    assert s.plan()[0] is not None, s.plan()[1]
    why = s.stream_problem()
    assert why is not None and "PEARL" in why and "AIM or MST" in why
    assert any(why in p for p in s.page_problems("release"))
    page = window.export_page
    page.refresh_now()
    assert not page.can_release()
    assert not page.run_button.isEnabled()
    assert "cannot run on this file" in page.cost_label.text() and why in page.cost_label.text()
    assert why in page.run_button.toolTip()
    # nor on a cluster, which reads the data in parts too
    assert not page.save_recipe_button.isEnabled()
    page.choose_recipe_path = lambda start: pytest.fail("no recipe is written for a cluster run")
    assert page.save_cluster_recipe() is None
    assert why in page.cluster_note.text()
    rp = window.release_page
    rp.refresh_now()
    assert "PEARL" in rp.problem_label.text()
    labels = {rp.method.itemData(i): rp.method.itemText(i) for i in range(rp.method.count())}
    assert "not for this file" in labels["pearl"] and "not for this file" not in labels["mst"]
    # MST reads only sums of counts: that reason goes away
    s.update(lambda r: replace(r, release=replace(r.release, options=r.release.options.with_(method="mst"))))
    assert s.stream_problem() is None
    assert not any("too large" in p for p in s.problems())
    page.refresh_now()
    assert page.save_recipe_button.isEnabled() and "cannot run on this file" not in page.cost_label.text()


def test_a_file_that_fits_can_still_use_pearl_but_not_on_a_cluster(qtbot, window, big_csv):
    load(qtbot, window, big_csv)
    s = window.session
    s.update(_pearl)
    assert s.stream_problem() is None and not s.problems()  # released in memory
    page = window.export_page
    page.refresh_now()
    assert "cannot run on this file" not in page.cost_label.text()
    assert not page.save_recipe_button.isEnabled()
    assert "PEARL" in page.cluster_note.text()


# ---- a cluster run: the recipe and the exact command -------------------------------------
@pytest.mark.parametrize("is_large", [True, False])
def test_the_cluster_command_and_the_recipe_it_runs(qtbot, window, big_csv, tmp_path, monkeypatch, is_large):
    from dpstudio import prefs
    from dpstudio.recipe.model import load_recipe

    if is_large:
        monkeypatch.setenv("DPSTUDIO_LARGE_FILE_BYTES", "1000")
    load(qtbot, window, big_csv)
    s = window.session
    assert (s.sample_of is not None) is is_large
    window.go_to(5)
    page = window.export_page
    assert not page.cluster_command_row.isVisibleTo(page)
    assert page.cluster_command_text() == ""
    folder = tmp_path / "for the cluster"
    recipe_path = folder / "people's release.recipe.json"
    page.choose_recipe_path = lambda start: str(recipe_path)
    out = tmp_path / "out dir" / "released.parquet"
    s.set_targets(output_path=str(out), report_path=str(out.with_name("rep.html")))
    page.scheduler.setText("tcp://10.1.2.3:8786")
    page.scheduler.editingFinished.emit()
    assert prefs.load()["cluster_scheduler"] == "tcp://10.1.2.3:8786"
    assert page.save_cluster_recipe() == str(recipe_path.resolve())
    expected = (
        f"dpstudio release {shlex.quote(str(recipe_path.resolve()))} --engine dask --scheduler tcp://10.1.2.3:8786 "
        f"--output {shlex.quote(str(out))} --report {shlex.quote(str(out.with_name('rep.html')))}"
    )
    assert page.cluster_command_text() == expected
    shown = page.cluster_command.toPlainText()  # one option a line, the same command for a shell
    assert shown.count(" \\\n    --") == 3 and shlex.split(shown.replace("\\\n", "")) == shlex.split(expected)
    assert page.cluster_command_row.isVisibleTo(page)
    assert shlex.split(expected)[2] == str(recipe_path.resolve())  # the quoting round-trips
    page.copy_cluster_command()
    from PySide6.QtWidgets import QApplication

    assert QApplication.clipboard().text() == expected
    written = load_recipe(recipe_path)
    assert written == s.recipe
    assert written.input.path == str(big_csv) and written.input.sha256 == _sha(big_csv)
    # the address is remembered for the next session's page
    from dpstudio.gui.wizard.export_page import ExportPage

    again = ExportPage(s, window.runner)
    qtbot.addWidget(again)
    assert again.scheduler.text() == "tcp://10.1.2.3:8786"
    # no address yet: the placeholder stands in the command, and the page says to replace it
    page.scheduler.setText("")
    assert "--scheduler tcp://SCHEDULER:8786" in page.cluster_command_text()
    assert "SCHEDULER" in page.cluster_note.text()
    # a changed recipe: the page says the saved file is stale
    s.update(lambda r: r.with_column("sex", role="ignore"))
    page.refresh_now()
    assert "save it again" in page.cluster_note.text()


def test_the_demo_is_unaffected(qtbot, window, tmp_path):
    """A small file keeps today's page: no notice, in-memory engine."""
    d = tmp_path / "demo"
    d.mkdir()
    shutil.copy(DEMO_CSV, d / "census_demo.csv")
    load(qtbot, window, d / "census_demo.csv")
    assert window.session.engine == "memory"
    assert window.data_page.sample_notice.text() == ""


def test_sampling_reports_progress_and_stops_on_cancel(big_csv, tmp_path):
    """The one pass over the file reports the rows read and stops at a cancel (no Qt needed)."""
    import pyarrow.parquet as pq

    from dpstudio.engine.data.sample import load_sample
    from dpstudio.engine.progress import Cancelled, CancelToken

    # a Parquet file of several batches, so the pass has somewhere to stop
    df = _table()
    big = pd.concat([df] * 30, ignore_index=True)
    path = tmp_path / "many.parquet"
    pq.write_table(_arrow_table(big), path, row_group_size=20_000)
    seen: list[tuple[float, str]] = []
    loaded = load_sample(path, rows=500, progress=lambda f, m="": seen.append((f, m)), cancel=CancelToken())
    assert loaded.sample_of == len(big) and len(loaded.frame) == 500
    assert any("rows for a sample" in m for _f, m in seen)
    fractions = [f for f, _m in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    token = CancelToken()

    def cancel_on_first_rows(f, m=""):
        if "rows for a sample" in m:
            token.cancel()

    with pytest.raises(Cancelled):
        load_sample(path, rows=500, progress=cancel_on_first_rows, cancel=token)


def _arrow_table(frame: pd.DataFrame):
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)
