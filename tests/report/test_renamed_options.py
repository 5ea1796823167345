"""The report's renamed options (issue 40, docs/glossary.md "Collisions to resolve"): ``write_report(max_memory=)``
is ``max_image_memory=``, ``ccmetrics report --out`` is ``--html`` and ``--max-memory`` is ``--max-image-memory``;
``ccmetrics partition --class`` (a label value, not an evaluated class) is ``--label``. The former spellings give the
same value for one release, with a ``DeprecationWarning`` that names the new one."""

import numpy as np
import pytest

from ccmetrics.cli import main


class _Called(Exception):
    pass


@pytest.fixture
def captured(monkeypatch):
    """The keywords ``build_model`` (under ``write_report``) or ``write_report`` (under the command) got."""
    import ccmetrics.report as report
    from ccmetrics.report import page

    got = {}

    def build_model(result_dir, **kwargs):
        got.update(kwargs, result_dir=result_dir)
        raise _Called

    def write_report(result_dir, out, **kwargs):
        got.update(kwargs, result_dir=result_dir, out=out)
        return "written"

    monkeypatch.setattr(page, "build_model", build_model)
    monkeypatch.setattr(report, "write_report", write_report)
    return got


def test_write_report_max_memory_warns_and_is_max_image_memory(tmp_path, captured):
    from ccmetrics.report.page import write_report  # the real one (the fixture stands in for the package's name)

    with pytest.raises(_Called):
        write_report(tmp_path, tmp_path / "r.html", max_image_memory="2G")
    assert captured["max_image_memory"] == "2G"
    captured.clear()
    with (
        pytest.warns(DeprecationWarning, match=r"write_report\(max_image_memory=\.\.\.\)") as caught,
        pytest.raises(_Called),
    ):
        write_report(tmp_path, tmp_path / "r.html", max_memory="2G")
    assert captured["max_image_memory"] == "2G" and "max_memory" not in captured
    assert caught[0].filename == __file__
    with pytest.raises(TypeError, match="give max_image_memory= only"):
        write_report(tmp_path, tmp_path / "r.html", max_memory="2G", max_image_memory="2G")
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_memry'"):
        write_report(tmp_path, tmp_path / "r.html", max_memry="2G")


def test_build_model_takes_the_former_keyword_too(tmp_path):
    from ccmetrics.report.model import build_model

    with pytest.warns(DeprecationWarning, match=r"build_model\(max_memory=\.\.\.\) is deprecated"):
        with pytest.raises(FileNotFoundError):  # the keyword is read first, then the (missing) folder
            build_model(tmp_path / "missing", max_memory="1G")


@pytest.mark.parametrize(
    ("former", "new", "key", "value"),
    [("--out", "--html", "out", "page.html"), ("--max-memory", "--max-image-memory", "max_image_memory", "3G")],
)
def test_report_former_options_warn_and_give_the_same_value(tmp_path, capsys, captured, former, new, key, value):
    images = tmp_path / "images"
    images.mkdir()
    base = ["report", str(tmp_path), "--images", str(images)]
    expected = str(tmp_path / value) if key == "out" else value
    given = expected
    assert main([*base, new, given]) == 0
    by_new = dict(captured)
    assert str(by_new[key]) == expected
    captured.clear()
    capsys.readouterr()
    with pytest.warns(DeprecationWarning, match=rf"ccmetrics report {former} is deprecated: use {new}"):
        assert main([*base, former, given]) == 0
    assert captured == by_new
    assert f"{former} is deprecated: use {new}" in capsys.readouterr().err
    assert main([*base, former, given, new, given]) == 2
    assert f"give {new} only" in capsys.readouterr().err


def test_report_options_that_need_images_name_the_spelling_given(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--max-image-memory", "1G"]) == 2
    assert "--max-image-memory go with --images" in capsys.readouterr().err
    with pytest.warns(DeprecationWarning):
        assert main(["report", str(tmp_path), "--max-memory", "1G"]) == 2
    assert "--max-memory go with --images" in capsys.readouterr().err


def test_partition_class_is_label(tmp_path, capsys):
    from ccmetrics.formats.io import load_image, save_image

    labels = np.zeros((12, 12, 4), np.uint8)
    labels[1:4, 1:4, 1:3] = 5
    labels[8:11, 8:11, 1:3] = 5
    labels[6, 6, 2] = 2
    save_image(tmp_path / "labels.nii.gz", labels)
    assert main(["partition", str(tmp_path / "labels.nii.gz"), str(tmp_path / "new.nii.gz"), "--label", "5"]) == 0
    with pytest.warns(DeprecationWarning, match="ccmetrics partition --class is deprecated: use --label"):
        assert main(["partition", str(tmp_path / "labels.nii.gz"), str(tmp_path / "old.nii.gz"), "--class", "5"]) == 0
    assert "--class is deprecated: use --label" in capsys.readouterr().err
    new, old = load_image(tmp_path / "new.nii.gz").array, load_image(tmp_path / "old.nii.gz").array
    assert np.array_equal(new, old) and int(new.max()) == 2
    assert (
        main(["partition", str(tmp_path / "labels.nii.gz"), str(tmp_path / "x.nii.gz"), "--class", "5", "--label", "5"])
        == 2
    )
