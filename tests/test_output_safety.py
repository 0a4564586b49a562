"""Issue 16 item 1: a release never overwrites what must survive (the input, the recipe, the
ledger and its side files, another target), never replaces a device or FIFO, and every target is
refused before anything is spent (issue 17 item 4: the point of no return)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstudio.cli import main


def _ledger_releases(ledger: Path) -> int:
    from dpstudio.ledger import Ledger

    if not ledger.exists():
        return 0
    return sum(d.get("releases", 0) for d in Ledger(ledger).datasets())


@pytest.fixture
def setup(tmp_path, monkeypatch, capsys):
    """A small table, its record recipe and a ledger that already holds one release."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    pd.DataFrame({"age": rng.integers(18, 80, 120), "sex": rng.choice(["f", "m"], 120)}).to_csv("in.csv", index=False)
    assert (
        main(
            [
                "recipe",
                "init",
                "in.csv",
                "-o",
                "rec.json",
                "--role",
                "age=sensitive",
                "--role",
                "sex=sensitive",
                "--bounds",
                "age=0:100",
                "--categories",
                "sex=f,m",
                "--confirm-inferred",
            ]
        )
        == 0
    )
    ledger = Path(os.environ["DPSTUDIO_LEDGER"])
    assert main(["release", "rec.json", "--output", "first.csv"]) == 0
    capsys.readouterr()
    return tmp_path, ledger


def _refused(capsys, argv, *, says: str, setup) -> str:
    """The release exits 2 with one line, the input and recipe are intact, nothing is spent."""
    d, ledger = setup
    before = {p: p.read_bytes() for p in (d / "in.csv", d / "rec.json")}
    spent = _ledger_releases(ledger)
    code = main(["release", "rec.json", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err, err
    assert "Traceback" not in err
    assert {p: p.read_bytes() for p in before} == before
    assert _ledger_releases(ledger) == spent
    return err


@pytest.mark.parametrize("output", ["in.csv", "./x/../in.csv"])
def test_output_equal_to_the_input_is_refused(setup, capsys, output):
    (setup[0] / "x").mkdir()
    _refused(capsys, ["--output", output], says="is the input data file", setup=setup)


def test_output_symlink_to_the_input_is_refused(setup, capsys):
    os.symlink("in.csv", setup[0] / "link.csv")
    _refused(capsys, ["--output", "link.csv"], says="is the input data file", setup=setup)


def test_an_output_link_into_a_missing_folder_is_refused_before_anything_is_read(setup, capsys, monkeypatch):
    """Audit finding: the link's own folder was checked, the folder it points into was written:
    a dangling link failed only after the input was read and the budget reserved."""
    import dpstudio.pipeline as pipeline

    os.symlink(setup[0] / "gone" / "out.csv", setup[0] / "dangling.csv")

    def no_read(*a, **k):
        raise AssertionError("the input was read before the output was checked")

    monkeypatch.setattr(pipeline, "load_input", no_read)
    _refused(capsys, ["--output", "dangling.csv"], says="is a link into a folder that does not exist", setup=setup)


def test_output_hard_link_to_the_input_is_refused(setup, capsys):
    os.link(setup[0] / "in.csv", setup[0] / "hard.csv")
    _refused(capsys, ["--output", "hard.csv"], says="is the input data file", setup=setup)


def test_output_equal_to_the_recipe_is_refused(setup, capsys):
    _refused(capsys, ["--output", "rec.json"], says="is the recipe", setup=setup)


@pytest.mark.parametrize("suffix", ["", "-wal", "-journal", ".head", ".key"])
def test_output_on_the_ledger_or_its_side_files_is_refused(setup, capsys, suffix):
    ledger = setup[1]
    target = ledger.with_name(ledger.name + suffix)
    keep = target.read_bytes() if target.exists() else None
    _refused(capsys, ["--output", str(target)], says="ledger", setup=setup)
    assert (target.read_bytes() if target.exists() else None) == keep
    assert main(["ledger", "verify"]) == 0  # every budget still there


@pytest.mark.parametrize("suffix", ["", ".head", ".key"])
def test_report_on_the_ledger_or_its_side_files_is_refused(setup, capsys, suffix):
    ledger = setup[1]
    target = ledger.with_name(ledger.name + suffix)
    keep = target.read_bytes()
    _refused(capsys, ["--output", "o.csv", "--report", str(target)], says="privacy ledger", setup=setup)
    assert target.read_bytes() == keep and not (setup[0] / "o.csv").exists()


def test_report_equal_to_the_output_is_refused(setup, capsys):
    _refused(capsys, ["--output", "o.csv", "--report", "o.csv"], says="are the same file", setup=setup)
    assert not (setup[0] / "o.csv").exists()


def test_report_equal_to_the_density_side_file_is_refused(setup, capsys):
    d = setup[0]
    assert (
        main(
            [
                "recipe",
                "init",
                "in.csv",
                "-o",
                "drec.json",
                "--release",
                "density",
                "--role",
                "age=sensitive",
                "--role",
                "sex=ignore",
                "--bounds",
                "age=0:100",
                "--option",
                "sample_rows=20",
                "--confirm-inferred",
            ]
        )
        == 0
    )
    spent = _ledger_releases(setup[1])
    code = main(["release", "drec.json", "--output", "d.csv", "--report", "d.artifact.json"])
    err = capsys.readouterr().err
    assert code == 2 and "density side file" in err and "same file" in err, err
    assert not (d / "d.csv").exists() and _ledger_releases(setup[1]) == spent


def _null_device(folder: Path) -> Path:
    """A character device like /dev/null, made in the test's own folder: a release is never run
    on the real /dev/null (with the bug back, as root, it would replace it)."""
    import stat

    path = folder / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("cannot make a device node here (not root)")
    return path


@pytest.mark.parametrize("special", ["device", "fifo"])
def test_a_device_or_fifo_is_never_replaced(setup, capsys, special):
    path = _null_device(setup[0]) if special == "device" else setup[0] / "fifo"
    if special == "fifo":
        os.mkfifo(path)
    _refused(capsys, ["--output", str(path)], says="not a regular file", setup=setup)
    assert not path.is_file()  # still the device / the FIFO


def test_dev_null_is_not_a_target(setup):
    """Checked without running a release (see _null_device)."""
    from dpstudio.errors import UserError
    from dpstudio.recipe.model import load_recipe
    from dpstudio.targets import validate_targets

    if not Path("/dev/null").exists():
        pytest.skip("no /dev/null here")
    with pytest.raises(UserError, match="not a regular file"):
        validate_targets(load_recipe("rec.json"), "/dev/null")


@pytest.mark.parametrize("flag", ["--output", "--report"])
def test_a_trailing_slash_names_a_folder(setup, capsys, flag):
    # an output ending with a slash is a partitioned Parquet dataset, which only a release read
    # in blocks writes; a report is always one file
    argv = ["--output", "o.csv", "--report", "new/"] if flag == "--report" else ["--output", "new/"]
    says = "ends with a slash" if flag == "--report" else "partitioned Parquet dataset"
    _refused(capsys, argv, says=says, setup=setup)
    assert not (setup[0] / "new").exists()


@pytest.mark.parametrize("argv", [["--output", "missing/o.csv"], ["--output", "o.csv", "--report", "missing/r.html"]])
def test_a_missing_folder_is_refused_before_anything_is_spent(setup, capsys, argv):
    _refused(capsys, argv, says="does not exist", setup=setup)
    assert not (setup[0] / "o.csv").exists()


def test_a_wrong_report_extension_is_refused_before_anything_is_spent(setup, capsys):
    _refused(capsys, ["--output", "o.csv", "--report", "r.txt"], says="report format", setup=setup)
    assert not (setup[0] / "o.csv").exists()


def test_a_wrong_output_extension_is_refused_before_the_input_is_read(setup, capsys, monkeypatch):
    import dpstudio.pipeline as run

    monkeypatch.setattr(run, "load_input", lambda *a, **k: pytest.fail("the input was read"))
    _refused(capsys, ["--output", "o.html"], says="output format", setup=setup)


def test_a_model_release_must_be_named_json(setup, capsys):
    d = setup[0]
    pd.DataFrame({"x": np.linspace(0, 1, 60), "y": [0, 1] * 30}).to_csv(d / "m.csv", index=False)
    assert (
        main(
            [
                "recipe",
                "init",
                "m.csv",
                "-o",
                "mrec.json",
                "--release",
                "model",
                "--role",
                "y=label",
                "--role",
                "x=sensitive",
                "--bounds",
                "x=0:1",
                "--categories",
                "y=0,1",
                "--confirm-inferred",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["release", "mrec.json", "--output", "model.csv"]) == 2
    assert "name the output .json" in capsys.readouterr().err
    assert not (d / "model.csv").exists()


def _real_readonly_folder(folder: Path) -> bool:
    folder.chmod(0o555)
    try:
        (folder / "probe").touch()
    except PermissionError:
        return True
    (folder / "probe").unlink()
    return False  # root (or a file system ignoring modes): chmod does not stop writes


def test_a_read_only_report_folder_is_refused_before_anything_is_spent(setup, capsys):
    ro = setup[0] / "ro"
    ro.mkdir()
    try:
        if not _real_readonly_folder(ro):
            pytest.skip("running as root: chmod does not make a folder read-only (see the probe test)")
        _refused(
            capsys,
            ["--output", "o.csv", "--report", str(ro / "r.html")],
            says="cannot write in the folder",
            setup=setup,
        )
    finally:
        ro.chmod(0o755)
    assert not (setup[0] / "o.csv").exists()


def test_the_writability_probe_refuses_a_folder_that_fails_writes(setup, capsys, monkeypatch):
    """Any user, root included: a folder whose file creation fails (read-only mount, quota) is
    refused by the probe before the reservation."""
    import dpstudio.targets as targets

    ro = setup[0] / "ro"
    ro.mkdir()
    real = targets.tempfile.mkstemp

    def mkstemp(*a, dir=None, **k):
        if Path(dir) == ro:
            raise OSError(errno.EROFS, "Read-only file system", str(ro))
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(targets.tempfile, "mkstemp", mkstemp)
    _refused(
        capsys, ["--output", "o.csv", "--report", str(ro / "r.html")], says="cannot write in the folder", setup=setup
    )
    assert not (setup[0] / "o.csv").exists()


def test_a_250_character_output_name_succeeds(setup, capsys):
    d, ledger = setup
    out, rep = "o" * 246 + ".csv", "r" * 245 + ".html"
    spent = _ledger_releases(ledger)
    code = main(["release", "rec.json", "--output", out, "--report", rep])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert Path(summary["output"]).name == out and Path(summary["report"]).name == rep
    assert (d / out).is_file() and (d / rep).is_file()
    assert _ledger_releases(ledger) == spent + 1
    assert not [p for p in os.listdir(d) if p.startswith(".")]  # no temporary left behind


def test_temporary_names_stay_within_the_name_limit(tmp_path):
    from dpstudio.export import name_max, temp_stem

    limit = name_max(tmp_path)
    long = "é" * 127  # 254 bytes
    stem = temp_stem(long, tmp_path, room=20)
    assert len(os.fsencode(stem)) + 20 <= limit
    assert temp_stem("short.csv", tmp_path, room=20) == "short.csv"
    assert temp_stem(long, tmp_path, room=20) != temp_stem(long[:-1] + "e", tmp_path, room=20)


# ---- an earlier release's output, a recipe, a domain file: the user's own, never replaced ----


@pytest.mark.parametrize("engine", [[], ["--engine", "stream"]])
def test_an_earlier_releases_output_is_not_written_over(setup, capsys, engine):
    """first.csv holds the setup's release (recorded, paid for): a second release to the same
    name is refused before anything is read or spent, and names that release; once the file has
    moved away (or is no longer that release's output) the name is free again."""
    d, ledger = setup
    first = (d / "first.csv").read_bytes()
    err = _refused(capsys, ["--output", "first.csv", *engine], says="holds the output of release 1", setup=setup)
    assert "epsilon = 1 spent" in err and "Choose another name" in err
    assert (d / "first.csv").read_bytes() == first
    from dpstudio.ledger import Ledger

    assert Ledger(ledger).verify() == []  # the earlier release's output is intact
    # the very file the release wrote, edited since (annotated, signed): still not replaced
    (d / "first.csv").write_text("age,sex\n1,f\n")
    _refused(capsys, ["--output", "first.csv", *engine], says="is the output (edited since) of release 1", setup=setup)
    # moved away, the name is free; the new release's output is then the recorded one there
    (d / "first.csv").rename(d / "kept.csv")
    assert main(["release", "rec.json", "--output", "first.csv", *engine]) == 0
    capsys.readouterr()
    _refused(capsys, ["--output", "first.csv", *engine], says="holds the output of release 2", setup=setup)


def test_an_unrecorded_release_does_not_write_over_a_recorded_output_either(setup, capsys):
    # --no-ledger records nothing but still reads the ledger (a cap refuses): the earlier
    # output would be lost just the same
    _refused(capsys, ["--output", "first.csv", "--no-ledger"], says="holds the output of release 1", setup=setup)


def test_recipe_init_does_not_replace_an_existing_file_without_force(setup, capsys):
    d, _ = setup
    (d / "rec.json").write_text((d / "rec.json").read_text().replace('"sensitive"', '"sensitive" ', 1))
    mine = (d / "rec.json").read_bytes()
    code = main(["recipe", "init", "in.csv", "-o", "rec.json"])
    err = capsys.readouterr().err
    assert code == 2 and "already exists" in err and "--force" in err, err
    assert (d / "rec.json").read_bytes() == mine
    assert main(["recipe", "init", "in.csv", "-o", "rec.json", "--force"]) == 3  # written, with problems
    assert (d / "rec.json").read_bytes() != mine


def test_recipe_domains_does_not_replace_an_existing_file_without_force(setup, capsys):
    d, _ = setup
    (d / "dom.json").write_text("{}")
    code = main(["recipe", "domains", "rec.json", "-o", "dom.json"])
    err = capsys.readouterr().err
    assert code == 2 and "already exists" in err, err
    assert (d / "dom.json").read_text() == "{}"
    assert main(["recipe", "domains", "rec.json", "-o", "dom.json", "--force"]) == 0
    assert (d / "dom.json").read_text() != "{}"


def test_a_moved_or_copied_paid_output_is_not_written_over_either(setup, capsys):
    """The ledger knows an output by its bytes: moved (or copied) elsewhere it is still the
    release paid for."""
    d, _ = setup
    (d / "first.csv").rename(d / "archive.csv")
    _refused(capsys, ["--output", "archive.csv"], says="is inside or a copy of the output", setup=setup)
    (d / "link.csv").symlink_to(d / "archive.csv")
    _refused(capsys, ["--output", "link.csv"], says="of release 1", setup=setup)


def test_a_density_side_file_may_not_be_an_earlier_output(setup, capsys):
    d, ledger = setup
    assert main(["release", "rec.json", "--output", "y.artifact.json"]) == 0
    capsys.readouterr()
    args = ["--release", "density", "--role", "age=sensitive", "--role", "sex=ignore", "--bounds", "age=0:100"]
    assert main(["recipe", "init", "in.csv", "-o", "dens.json", *args, "--option", "sample_rows=20"]) == 0
    spent = _ledger_releases(ledger)
    code = main(["release", "dens.json", "--output", "y.csv"])
    err = capsys.readouterr().err
    assert code == 2 and "density side file" in err and "of release 2" in err, err
    assert _ledger_releases(ledger) == spent and not (d / "y.csv").exists()


def test_nothing_is_written_into_a_recorded_dataset_folder(setup, capsys):
    d, ledger = setup
    assert main(["release", "rec.json", "--output", "ds/", "--engine", "stream", "--block-rows", "50"]) == 0
    capsys.readouterr()
    part = sorted((d / "ds").iterdir())[0]
    before = part.read_bytes()
    _refused(capsys, ["--output", str(part)], says="is inside or a copy of the output", setup=setup)
    _refused(capsys, ["--output", "ds/extra.csv"], says="of release 2", setup=setup)
    _refused(capsys, ["--output", "o.csv", "--report", "ds/r.html"], says="the report", setup=setup)
    assert part.read_bytes() == before


def test_two_releases_in_flight_may_not_share_an_output(tmp_path):
    from dpstudio.engine.accounting import PrivacyLoss
    from dpstudio.errors import UserError
    from dpstudio.ledger import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    loss = PrivacyLoss(epsilon=1.0, delta=0.0)
    first = led.reserve("a" * 64, loss=loss, output_path=tmp_path / "o.csv", dataset_name="t.csv")
    with pytest.raises(UserError, match=f"release {first.id} is writing"):
        led.reserve("a" * 64, loss=loss, output_path=tmp_path / "o.csv", dataset_name="t.csv")
    assert led.summary(first.dataset)["in_progress"]["releases"] == 1  # the refused one left no row
    led.abort(first)
    led.reserve("a" * 64, loss=loss, output_path=tmp_path / "o.csv", dataset_name="t.csv")  # free again


def test_force_never_replaces_a_ledger_the_input_or_a_paid_output(setup, capsys):
    d, ledger = setup
    other = d / "other.sqlite"
    from dpstudio.ledger import Ledger

    Ledger(other).datasets()  # a second ledger, not the default one
    before = other.read_bytes()
    for argv in (
        ["recipe", "init", "in.csv", "-o", str(other), "--force"],
        ["recipe", "domains", "rec.json", "-o", str(other), "--force"],
    ):
        assert main(argv) == 2
        assert "SQLite database" in capsys.readouterr().err
    assert other.read_bytes() == before
    # the input under another name (a relative input path seen from elsewhere): refused by its bytes
    (d / "copy.csv").write_bytes((d / "in.csv").read_bytes())
    assert main(["recipe", "domains", "rec.json", "-o", "copy.csv", "--force"]) == 2
    assert "holds the recipe's input data" in capsys.readouterr().err
    # an earlier release's output
    paid = (d / "first.csv").read_bytes()
    assert main(["recipe", "init", "in.csv", "-o", "first.csv", "--force"]) == 2
    assert "of release 1" in capsys.readouterr().err
    assert (d / "first.csv").read_bytes() == paid


def test_a_slash_after_an_existing_file_name_says_what_it_means(setup, capsys):
    _refused(capsys, ["--output", "first.csv/", "--engine", "stream"], says="is a file", setup=setup)


def test_an_earlier_releases_report_is_not_written_over(setup, capsys):
    """A recorded release's report (the document a compliance officer signs) is recorded with it:
    a later release may not replace it, and 'ledger verify' checks it."""
    d, ledger = setup
    assert main(["release", "rec.json", "--output", "a.csv", "--report", "r.html"]) == 0
    capsys.readouterr()
    from dpstudio.ledger import Ledger

    led = Ledger(ledger)
    rid = max(e["id"] for e in led.show("in.csv")["entries"])
    report = (d / "r.html").read_bytes()
    err = _refused(
        capsys, ["--output", "b.csv", "--report", "r.html"], says=f"holds the report of release {rid}", setup=setup
    )
    assert "Choose another name" in err and (d / "r.html").read_bytes() == report and not (d / "b.csv").exists()
    assert led.verify() == []
    assert main(["ledger", "verify"]) == 0
    (d / "r.html").write_text("edited")
    assert any("report" in p and "changed since the release" in p for p in led.verify())
    capsys.readouterr()
    assert main(["ledger", "verify"]) == 2  # scripts read the exit code
    assert "changed since the release" in capsys.readouterr().out


def test_a_signed_report_is_acknowledged_and_verify_passes_until_it_changes_again(setup, capsys):
    """A report the officer signed changes its bytes; 'ledger acknowledge' accepts those bytes
    (before, 'ledger verify' failed for good); a later change is reported again."""
    d, ledger = setup
    assert main(["release", "rec.json", "--output", "a.csv", "--report", "r.html"]) == 0
    capsys.readouterr()
    # nothing to acknowledge: unchanged, not a release's file, missing
    assert main(["ledger", "acknowledge", "r.html"]) == 2
    assert "unchanged since release" in capsys.readouterr().err
    (d / "mine.txt").write_text("x")
    assert main(["ledger", "acknowledge", "mine.txt"]) == 2
    assert "is not a file a release recorded" in capsys.readouterr().err
    assert main(["ledger", "acknowledge", "nosuch.html"]) == 2
    capsys.readouterr()
    (d / "r.html").write_text("signed: J. Officer")
    assert main(["ledger", "verify"]) == 2
    capsys.readouterr()
    assert main(["ledger", "acknowledge", "r.html", "--note", "signed by the DPO"]) == 0
    ack = json.loads(capsys.readouterr().out)
    assert ack["file"] == "report" and ack["note"] == "signed by the DPO"
    assert ack["released_sha256"] != ack["acknowledged_sha256"]
    assert main(["ledger", "verify"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outputs"] == [] and "signed by the DPO" in out["acknowledged_edits"][0]
    # the output itself too; and an acknowledged file stays that release's (not written over)
    (d / "a.csv").write_text("annotated")
    assert main(["ledger", "verify"]) == 2
    assert main(["ledger", "acknowledge", "a.csv"]) == 0
    assert main(["ledger", "verify"]) == 0
    _refused(
        capsys, ["--output", "b.csv", "--report", "r.html"], says="is the report (edited since) of release", setup=setup
    )
    # changed again after the acknowledgement: reported again
    (d / "r.html").write_text("signed twice")
    capsys.readouterr()
    assert main(["ledger", "verify"]) == 2
    assert "changed since the release" in capsys.readouterr().out


def test_a_density_side_file_is_recorded_and_never_written_over(setup, capsys):
    d, ledger = setup
    args = ["--release", "density", "--role", "age=sensitive", "--role", "sex=ignore", "--bounds", "age=0:100"]
    assert main(["recipe", "init", "in.csv", "-o", "dens.json", *args, "--option", "sample_rows=20"]) == 0
    assert main(["release", "dens.json", "--output", "y.csv"]) == 0
    capsys.readouterr()
    side = (d / "y.artifact.json").read_bytes()
    _refused(capsys, ["--output", "y.artifact.json"], says="holds the density side file of release 2", setup=setup)
    assert (d / "y.artifact.json").read_bytes() == side
    from dpstudio.ledger import Ledger

    assert Ledger(ledger).verify() == []
    shown = Ledger(ledger).show("in.csv")["entries"][-1]
    assert shown["artifact_path"] == str(d / "y.artifact.json") and shown["report_path"] is None
    (d / "y.artifact.json").write_text("{}")
    assert any("density side file" in p and "changed" in p for p in Ledger(ledger).verify())


def test_a_copy_of_an_intact_paid_output_is_the_users_to_replace(setup, capsys):
    d, _ = setup
    (d / "mycopy.csv").write_bytes((d / "first.csv").read_bytes())
    assert main(["release", "rec.json", "--output", "mycopy.csv"]) == 0
    assert (d / "first.csv").exists()


def test_a_release_completed_to_the_name_meanwhile_is_refused_at_the_reservation(tmp_path):
    """The early check runs before the input is read; a release that completes to the same name
    in between is caught under the ledger's lock."""
    from dpstudio.engine.accounting import PrivacyLoss
    from dpstudio.errors import UserError
    from dpstudio.ledger import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    loss = PrivacyLoss(epsilon=1.0, delta=0.0)
    out = tmp_path / "o.csv"
    first = led.reserve("a" * 64, loss=loss, output_path=out, dataset_name="t.csv")
    led.write_and_commit(first, out, lambda tmp: Path(tmp).write_text("x\n1\n"))
    with pytest.raises(UserError, match=f"holds the output of release {first.id}, completed while"):
        led.reserve("a" * 64, loss=loss, output_path=out, dataset_name="t.csv")
    assert led.summary(first.dataset)["releases"] == 1 and "in_progress" not in led.summary(first.dataset)


def test_a_report_name_is_held_until_its_release_has_written_it(tmp_path):
    """Two releases that share a report name: the later one's report would replace the earlier's
    after both were charged.  The report (and a density side file) is held from the reservation
    until the release has written it, also after its commit, while its process lives."""
    from dpstudio.engine.accounting import PrivacyLoss
    from dpstudio.errors import UserError
    from dpstudio.ledger import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    loss = PrivacyLoss(epsilon=1.0, delta=0.0)
    rep = tmp_path / "r.html"
    first = led.reserve(
        "a" * 64, loss=loss, output_path=tmp_path / "o.csv", dataset_name="t.csv", side_files={"report": rep}
    )
    for kw in (
        {"output_path": tmp_path / "p.csv", "side_files": {"report": rep}},
        {"output_path": tmp_path / "p.csv", "side_files": {"density side file": rep}},
        {"output_path": rep},
    ):
        with pytest.raises(UserError, match=f"release {first.id} is writing {rep} right now"):
            led.reserve("a" * 64, loss=loss, dataset_name="t.csv", **kw)
    # committed: the output is in place, the report not yet written - still held
    led.write_and_commit(first, tmp_path / "o.csv", lambda tmp: Path(tmp).write_text("x\n1\n"))
    with pytest.raises(
        UserError, match=f"release {first.id} is writing {rep} right now: choose another name for the report"
    ):
        led.reserve(
            "a" * 64, loss=loss, output_path=tmp_path / "p.csv", dataset_name="t.csv", side_files={"report": rep}
        )
    assert led.summary(first.dataset)["releases"] == 1 and "in_progress" not in led.summary(first.dataset)
    rep.write_text("<html>first</html>")
    led.record_file(first.id, "report", rep)
    led.files_written(first)
    # written and recorded: its bytes protect it now (a refusal under the lock, like an output's)
    with pytest.raises(UserError, match=f"holds the report of release {first.id}, completed while"):
        led.reserve(
            "a" * 64, loss=loss, output_path=tmp_path / "p.csv", dataset_name="t.csv", side_files={"report": rep}
        )
    rep.write_text("<html>edited by the user</html>")  # no longer the paid report: the user's file
    led.reserve("a" * 64, loss=loss, output_path=tmp_path / "p.csv", dataset_name="t.csv", side_files={"report": rep})


def test_a_report_name_held_by_a_finished_process_is_free(tmp_path):
    """A release whose process ended before it freed its report's name (killed after its commit)
    holds nothing: the process's start time tells a reused pid apart."""
    import sqlite3
    import subprocess
    import sys

    from dpstudio.engine.accounting import PrivacyLoss
    from dpstudio.ledger import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    loss = PrivacyLoss(epsilon=1.0, delta=0.0)
    rep = tmp_path / "r.html"
    first = led.reserve(
        "a" * 64, loss=loss, output_path=tmp_path / "o.csv", dataset_name="t.csv", side_files={"report": rep}
    )
    led.write_and_commit(first, tmp_path / "o.csv", lambda tmp: Path(tmp).write_text("x\n1\n"))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    con = sqlite3.connect(tmp_path / "l.sqlite")
    with con:
        con.execute("UPDATE entries SET pid=? WHERE id=?", (int(gone.stdout), first.id))
    con.close()
    second = led.reserve(
        "a" * 64, loss=loss, output_path=tmp_path / "p.csv", dataset_name="t.csv", side_files={"report": rep}
    )
    assert second.id != first.id


def test_a_release_frees_its_report_name_when_done(setup, capsys):
    import sqlite3

    d, ledger = setup
    assert main(["release", "rec.json", "--output", "o2.csv", "--report", "o2.html"]) == 0
    con = sqlite3.connect(ledger)
    rows = con.execute("SELECT report_path, targets FROM entries ORDER BY id").fetchall()
    con.close()
    assert rows[-1] == (str((d / "o2.html").resolve()), None)


def test_an_output_extension_that_overrides_the_recipe_format_is_said(setup, capsys):
    import json as _json

    d, _ = setup
    roles = ["--role", "age=sensitive", "--role", "sex=sensitive", "--bounds", "age=0:100", "--categories", "sex=f,m"]
    assert main(["recipe", "init", "in.csv", "-o", "pq.json", "--format", "parquet", *roles, "--confirm-inferred"]) == 0
    capsys.readouterr()
    assert main(["release", "pq.json", "--output", "as_csv.csv"]) == 0
    warnings = _json.loads(capsys.readouterr().out)["warnings"]
    assert any("written as csv, as its name as_csv.csv says" in w and "(parquet)" in w for w in warnings), warnings
    assert main(["release", "pq.json", "--output", "as_pq.parquet"]) == 0
    assert not any("written as" in w for w in _json.loads(capsys.readouterr().out)["warnings"])


def test_an_unrecorded_release_report_does_not_count_releases_down(setup, capsys):
    """--no-ledger with an existing ledger (consulted for its cap): the report's ledger table has
    no "after" figures, rather than "Releases recorded 1 -> 0"."""
    import re
    from html import unescape

    d, _ = setup
    assert main(["release", "rec.json", "--output", "nl.csv", "--report", "nl.html", "--no-ledger"]) == 0
    text = re.sub(r"<[^>]+>", "|", unescape((d / "nl.html").read_text()))
    row = re.search(r"Releases recorded\|+([^|]*)\|+([^|]*)\|", text)
    assert row is not None and row.groups() == ("1", "—"), row and row.groups()


def test_over_cap_advice_counts_the_dp_domain_estimates(setup, capsys):
    """The refusal's advice gives the budget.epsilon that fits: what is left less what the DP
    domain estimates add (lowering to what is left would be refused again)."""
    d, _ = setup  # one release of ε = 1 recorded
    assert main(["ledger", "set-cap", "in.csv", "1.75"]) == 0
    args = ["--role", "age=sensitive", "--role", "sex=sensitive", "--bounds", "age=0:100"]
    assert main(["recipe", "init", "in.csv", "-o", "dp.json", *args, "--categories", "sex=dp:0.05"]) in (0, 3)
    recipe = json.loads((d / "dp.json").read_text())
    recipe["budget"]["epsilon"] = 0.71
    (d / "dp.json").write_text(json.dumps(recipe))
    capsys.readouterr()
    assert main(["release", "dp.json", "--output", "dp.csv"]) == 2
    err = capsys.readouterr().err
    assert "release would spend ε=0.76" in err and "ε=0.75 left" in err, err
    assert "to at most 0.7 (what is left, less the 0.05 its DP domain estimates add)" in err, err
    recipe["budget"]["epsilon"] = 0.7
    (d / "dp.json").write_text(json.dumps(recipe))
    assert main(["release", "dp.json", "--output", "dp.csv"]) == 0  # the advice was right


def test_another_datasets_raw_input_is_never_written_over(setup, capsys):
    """A file whose bytes are a dataset version the ledger knows is private data: no release
    (nor recipe init -o --force) writes over it, even when it is not this recipe's input."""
    d, _ = setup
    other = pd.DataFrame({"age": [30, 40, 50] * 20, "sex": ["f", "m", "f"] * 20})
    other.to_csv("other.csv", index=False)
    args = ["--role", "age=sensitive", "--role", "sex=sensitive", "--bounds", "age=0:100", "--categories", "sex=f,m"]
    assert main(["recipe", "init", "other.csv", "-o", "other.json", *args, "--confirm-inferred"]) == 0
    assert main(["release", "other.json", "--output", "o_other.csv"]) == 0
    capsys.readouterr()
    raw = (d / "other.csv").read_bytes()
    _refused(capsys, ["--output", "other.csv"], says="holds the data of dataset", setup=setup)
    assert main(["recipe", "init", "in.csv", "-o", "other.csv", "--force", *args]) == 2
    assert "holds the data of dataset" in capsys.readouterr().err
    assert (d / "other.csv").read_bytes() == raw


def test_an_xlsx_output_larger_than_a_sheet_is_refused_before_anything_is_spent(setup, capsys, monkeypatch):
    """(The sheet limit lowered to 100 rows so that the 120-row table exceeds it.)"""
    from dpstudio import targets

    monkeypatch.setattr(targets, "XLSX_MAX_ROWS", 100)
    _refused(capsys, ["--output", "big.xlsx"], says="more than an XLSX sheet holds (100 and a header)", setup=setup)
    monkeypatch.setattr(targets, "XLSX_MAX_ROWS", 120)
    assert main(["release", "rec.json", "--output", "fits.xlsx"]) == 0


def test_an_unrecorded_release_may_not_write_a_name_a_recorded_release_holds(tmp_path):
    """--no-ledger records nothing, but its report would still replace the report of a recorded
    release in flight (charged): the held names refuse it too."""
    from dpstudio.engine.accounting import PrivacyLoss
    from dpstudio.errors import UserError
    from dpstudio.ledger import Ledger

    led = Ledger(tmp_path / "l.sqlite")
    loss = PrivacyLoss(epsilon=1.0, delta=0.0)
    rep = tmp_path / "r.html"
    first = led.reserve(
        "a" * 64, loss=loss, output_path=tmp_path / "o.csv", dataset_name="t.csv", side_files={"report": rep}
    )
    with pytest.raises(UserError, match=f"release {first.id} is writing {rep} right now"):
        led.check_unrecorded("a" * 64, loss=loss, output_path=tmp_path / "p.csv", side_files={"report": rep})
    led.check_unrecorded(
        "a" * 64, loss=loss, output_path=tmp_path / "p.csv", side_files={"report": tmp_path / "q.html"}
    )


def test_over_cap_advice_when_only_the_delta_cap_refuses(setup, capsys):
    d, _ = setup  # one release of ε = 1, δ = 0 recorded
    assert main(["ledger", "set-cap", "in.csv", "10", "0"]) == 0
    args = ["--role", "age=sensitive", "--role", "sex=sensitive", "--bounds", "age=0:100"]
    assert main(["recipe", "init", "in.csv", "-o", "dp.json", *args, "--categories", "sex=dp:0.05"]) in (0, 3)
    capsys.readouterr()
    assert main(["release", "dp.json", "--output", "dp.csv"]) == 2
    err = capsys.readouterr().err
    assert "To go on: make the release spend less δ" in err and "lower the recipe's epsilon" not in err, err


def test_a_density_side_file_is_named_in_the_summary_and_the_report(setup, capsys):
    """Audit finding: the JSON written beside a density's sampled rows (recorded in the ledger)
    was named neither by the CLI's summary nor by the report."""
    import hashlib

    d, _ledger = setup
    args = ["--release", "density", "--role", "age=sensitive", "--role", "sex=ignore", "--bounds", "age=0:100"]
    assert main(["recipe", "init", "in.csv", "-o", "dens.json", *args, "--option", "sample_rows=20"]) == 0
    capsys.readouterr()
    assert main(["release", "dens.json", "--output", "s.csv", "--report", "s.html"]) == 0
    summary = json.loads(capsys.readouterr().out)
    side = d / "s.artifact.json"
    digest = hashlib.sha256(side.read_bytes()).hexdigest()
    assert summary["side_file"] == str(side) and summary["side_file_sha256"] == digest
    page = (d / "s.html").read_text(encoding="utf-8")
    assert "s.artifact.json" in page and digest in page


@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_an_unrecorded_release_does_not_write_over_a_release_recorded_meanwhile(setup, capsys, monkeypatch, engine):
    """Audit finding: a --no-ledger release holds no names; a recorded release that completed
    o2.csv while it ran was then written over (verify: "changed since the release")."""
    import dpstudio.export as export
    import dpstudio.pipeline.blocks as blocks

    d, ledger = setup
    module, name = (export, "write_table") if engine == "memory" else (blocks, "_unchanged")
    real = getattr(module, name)
    calls, once = [], []
    # memory: while it writes its file (review finding: the look came before the write, not
    # before the rename); streamed: at the second pass's end (its last read)
    at_call = 1 if engine == "memory" else 2

    def meanwhile(*a, **k):
        calls.append(True)
        if len(calls) == at_call:  # while the unrecorded release runs, a recorded one completes o2.csv
            once.append(True)
            assert main(["release", "rec.json", "--output", "o2.csv"]) == 0
        return real(*a, **k)

    monkeypatch.setattr(module, name, meanwhile)
    spent = _ledger_releases(ledger)
    code = main(["release", "rec.json", "--output", "o2.csv", "--no-ledger", "--engine", engine])
    err = capsys.readouterr().err
    assert once and code == 2 and "o2.csv" in err, err
    assert main(["ledger", "verify"]) == 0, capsys.readouterr()
    assert _ledger_releases(ledger) != spent  # the recorded one stands, intact


def test_a_column_an_earlier_release_protected_and_this_one_copies_is_warned(setup, capsys):
    """Walkthrough finding: a column perturbed by one release and published unchanged by the next
    (marked public) passed without a word; the second copy undoes the first one's noise."""
    d, ledger = setup  # release 1 perturbed age and sex
    args = ["--role", "age=sensitive", "--role", "sex=public", "--bounds", "age=0:100", "--confirm-inferred"]
    assert main(["recipe", "init", "in.csv", "-o", "copy_sex.json", *args]) == 0
    capsys.readouterr()
    assert main(["recipe", "check", "copy_sex.json", "--with-data"]) == 0
    checked = json.loads(capsys.readouterr().out)
    said = [w for w in checked.get("warnings", []) if "protected with noise" in w]
    assert said and "sex (release 1)" in said[0] and "age" not in said[0], checked.get("warnings")
    assert main(["release", "copy_sex.json", "--output", "o2.csv"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert any("sex (release 1)" in w for w in summary["warnings"]), summary["warnings"]
    # what the ledger keeps of each release's columns
    from dpstudio.ledger import Ledger

    dataset = summary["dataset_identity"]["dataset"]
    assert Ledger(ledger).protected_before(dataset, ["SEX"]) == {"SEX": [1]}  # names without case
    assert Ledger(ledger).protected_before(dataset, ["age"]) == {"age": [1, 2]}


def test_an_output_that_is_a_loop_of_links_is_a_users_error(setup, capsys):
    """Review finding: following the output's link to probe its folder crashed on a loop of links
    ("internal error: RuntimeError", exit 1) where the release used to refuse it (exit 2)."""
    d = setup[0]
    os.symlink(d / "loop_b.csv", d / "loop_a.csv")
    os.symlink(d / "loop_a.csv", d / "loop_b.csv")
    _refused(capsys, ["--output", "loop_a.csv"], says="loop_a.csv", setup=setup)


def test_the_earlier_protection_warning_names_a_few_releases_and_how_many_more():
    """Second review: every release id was listed (3,000 releases made a 34,000-character warning)."""
    from dpstudio.pipeline import earlier_protection_warning

    class Ledger:
        def protected_before(self, dataset, names, exclude=None):
            return {"age": list(range(1, 3001)), "sex": [7]}

    class Plan:
        def unchanged_columns(self):
            return ("age", "sex")

    text = earlier_protection_warning(Ledger(), "key", Plan())
    assert "age (releases 1, 2, 3, 4, 5 and 2995 more); sex (release 7)" in text and len(text) < 300
