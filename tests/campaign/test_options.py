"""The option objects of a data-set evaluation (issue 40): built by keywords, the former keywords and names kept
with one ``DeprecationWarning`` each, the records and resume fingerprints unchanged, the typed case output."""

import json
import warnings

import numpy as np
import pytest

import ccmetrics
from ccmetrics.campaign import CaseOutput, CaseTask, EvalOptions, PairingOptions, ProbabilityOptions, RunOptions
from ccmetrics.campaign.case import evaluate_task, failed_output, fingerprint
from ccmetrics.campaign.dataset import evaluate_dataset
from ccmetrics.campaign.records import encode_output
from ccmetrics.formats.io import Image, save_image

# EvalOptions.record() (now to_summary()) of the code before the option objects (commit f401def), for four sets of
# options: a folder it wrote is resumed by this code only if each case's fingerprint (these options among them) is
# the same
FORMER_RECORDS = {
    "a": {"metrics": ["dice", "detection"], "classes": None, "ignore_label": None, "spacing": "voxel",
          "nsd_tolerance": 1.0, "worst_distance": None, "connectivity": None, "detection_rule": "overlap",
          "gt_suffix": "_0000", "pred_suffix": None, "tolerance_mm": 0.001},
    "b": {"metrics": ["dice", "nsd", "hd95"], "classes": [{"value": 1, "name": "wt", "labels": [1, 2]},
          {"value": 2, "name": "et", "labels": [2]}], "ignore_label": None, "spacing": [0.5, 0.5, 2.0],
          "nsd_tolerance": 2.0, "worst_distance": 50.0, "connectivity": 6, "detection_rule": "iou:0.3",
          "nnunet_summary": True, "gt_suffix": None, "pred_suffix": "_pred", "tolerance_mm": 0.01},
    "c": {"metrics": ["dice"], "classes": None, "ignore_label": None, "spacing": "header", "nsd_tolerance": 1.0,
          "worst_distance": None, "connectivity": None, "detection_rule": "iou:0.1",
          "probabilities": {"candidates": "threshold:0.25", "confidence": "max", "match_by": "overlap", "channel": 1,
                            "segment_from_map": True, "thresholds": [0.1, 0.3, 0.5]},
          "gt_suffix": None, "pred_suffix": None, "tolerance_mm": 0.001},
    "d": {"metrics": ["dice"], "classes": [{"value": 1, "name": "1", "labels": [1]},
          {"value": 2, "name": "2", "labels": [2]}], "ignore_label": 3, "spacing": "header", "nsd_tolerance": 1.0,
          "worst_distance": None, "connectivity": None, "detection_rule": "iou:0.1",
          "probabilities": {"candidates": "prediction", "confidence": "mean", "match_by": "confidence",
                            "channel": None, "segment_from_map": False, "class_channels": [[1, 1], [2, 2]]},
          "gt_suffix": None, "pred_suffix": None, "tolerance_mm": 0.001},
}  # fmt: skip


def _new_options():
    """The four sets of options of FORMER_RECORDS, made by keywords as a user makes them."""
    a = EvalOptions(metrics=["dice", "detection"], spacing="voxel").checked()
    b = EvalOptions(
        metrics=["dice", "nsd", "hd95"],
        classes="wt=1+2,et=2",
        spacing=(0.5, 0.5, 2),
        nsd_tolerance=2,
        worst_distance=50.0,
        connectivity=6,
        tolerance_mm=0.01,
        detection_rule="iou:0.3",
        nnunet_summary=True,
        max_memory=123,
    ).checked()
    maps = ProbabilityOptions(candidates="threshold:0.25", thresholds="0.1:0.5:0.2", prob_channel=1)
    c = EvalOptions(metrics="dice", probabilities=maps.checked(pred_given=False)).checked()
    maps = ProbabilityOptions(confidence="mean", match_by="confidence").checked(pred_given=True)
    d = EvalOptions(metrics=["dice"], classes=[1, 2], ignore_label=3, probabilities=maps).checked()
    return {"a": (a, "_0000", None), "b": (b, None, "_pred"), "c": (c, None, None), "d": (d, None, None)}


def test_records_of_the_option_objects_equal_the_former_ones():
    for name, (options, gt_suffix, pred_suffix) in _new_options().items():
        record = options.to_summary(gt_suffix, pred_suffix)
        assert json.dumps(record) == json.dumps(FORMER_RECORDS[name]), name  # key order too: the same bytes


def test_build_gives_the_options_of_the_keywords():
    options, _, _ = _new_options()["b"]
    with pytest.warns(DeprecationWarning, match=r"use EvalOptions.build\(max_memory=...\)"):
        built = EvalOptions.build(
            ["dice", "nsd", "hd95"],
            classes="wt=1+2,et=2",
            spacing=(0.5, 0.5, 2),
            nsd_tolerance=2,
            worst_distance=50.0,
            connectivity=6,
            tolerance_mm=0.01,
            detection_rule="iou:0.3",
            nnunet_summary=True,
            max_case_bytes=123,
        )
    assert built == options


def test_from_record_reads_back_the_options():
    for options, gt_suffix, pred_suffix in _new_options().values():
        record = options.to_summary(gt_suffix, pred_suffix)
        assert EvalOptions.from_record(record).checked().key() == options.key()
        assert PairingOptions.from_record(record) == PairingOptions(gt_suffix=gt_suffix, pred_suffix=pred_suffix)
    assert EvalOptions.from_record({"metrics": ["dice"]}).key() == EvalOptions.build(["dice"]).key()  # older folders


def test_renamed_fields_warn_and_give_the_same_value():
    with pytest.warns(DeprecationWarning, match=r"EvalOptions\(max_case_bytes=...\) is deprecated: use EvalOptions"):
        old = EvalOptions(metrics=("dice",), max_case_bytes=1000, nnunet_counts=True)
    assert old == EvalOptions(metrics=("dice",), max_memory=1000, nnunet_summary=True)
    with pytest.warns(
        DeprecationWarning, match=r"EvalOptions.max_case_bytes is deprecated: use EvalOptions.max_memory"
    ):
        assert old.max_case_bytes == 1000
    with pytest.warns(DeprecationWarning, match=r"use EvalOptions.nnunet_summary"):
        assert old.nnunet_counts is True
    with pytest.warns(DeprecationWarning, match=r"ProbabilityOptions\(channel=...\) is deprecated"):
        maps = ProbabilityOptions(channel=2)
    assert maps == ProbabilityOptions(prob_channel=2)
    with pytest.warns(DeprecationWarning, match=r"use ProbabilityOptions.prob_channel"):
        assert maps.channel == 2
    with pytest.warns(DeprecationWarning, match=r"ProbabilityOptions.build\(prob_channel=...\)"):
        built = ProbabilityOptions.build(None, None, pred_given=True, channel=2)
    assert built == ProbabilityOptions.build(None, None, pred_given=True, prob_channel=2)
    with pytest.raises(TypeError, match="give max_memory= only"):
        EvalOptions(max_case_bytes=1, max_memory=2)


def _one(pred, gt, **_):
    return 1.0


def test_record_is_to_summary_and_records_are_metric_definitions():
    """The 'record' collision (docs/glossary.md): ``EvalOptions.record()`` is ``to_summary()`` and
    ``EvalOptions.records`` (the user's metrics' registry entries) is ``metric_definitions``; the former names give
    the same value with a ``DeprecationWarning``; the summary's bytes and :meth:`key` do not change."""
    from ccmetrics.metrics import registry

    options, gt_suffix, pred_suffix = _new_options()["b"]
    with pytest.warns(
        DeprecationWarning, match=r"^EvalOptions.record\(\) is deprecated: use EvalOptions.to_summary\(\)"
    ):
        former = options.record(gt_suffix, pred_suffix)
    assert (
        json.dumps(former) == json.dumps(options.to_summary(gt_suffix, pred_suffix)) == json.dumps(FORMER_RECORDS["b"])
    )
    definition = registry.Metric("my_volsim", "Mine", "overlap", "region", _one, best=1.0)
    mine = EvalOptions(metrics=["dice", definition])
    assert mine.metrics == ("dice", "my_volsim") and mine.metric_definitions == (definition,)
    with pytest.warns(
        DeprecationWarning, match=r"^EvalOptions.records is deprecated: use EvalOptions.metric_definitions"
    ):
        assert mine.records == (definition,)
    with pytest.warns(
        DeprecationWarning, match=r"^EvalOptions\(records=...\) is deprecated: use EvalOptions\(metric_def"
    ):
        by_keyword = EvalOptions(metrics=["dice"], records=(definition,))
    assert by_keyword == EvalOptions(metrics=["dice"], metric_definitions=(definition,))
    assert by_keyword.metric_arguments() == ["dice"] and mine.metric_arguments() == ["dice", definition]
    assert mine.key() == EvalOptions(metrics=["dice", "my_volsim"]).key()  # the definitions are not in the key
    with pytest.raises(TypeError, match="give metric_definitions= only"):
        EvalOptions(records=(), metric_definitions=())


def test_from_record_reads_the_labels_of_older_folders():
    """Folders written before classes had names hold the label values only."""
    options = EvalOptions.from_record({"metrics": ["dice"], "classes": [1, 3]})
    assert [(c.value, c.name, c.labels) for c in options.classes] == [(1, "1", (1,)), (3, "3", (3,))]


def test_spacing_in_voxels_is_spelled_three_ways():
    spellings = [EvalOptions(spacing=s).spacing for s in ("voxel", "voxels", None)]
    assert spellings == ["voxel", "voxel", "voxel"]
    with pytest.raises(ValueError, match="spacing must be 'header', 'voxel' or numbers"):
        EvalOptions(spacing="mm")


def _cases():
    gt = np.zeros((16, 16), np.uint8)
    gt[2:6, 2:6] = 1
    gt[10:12, 10:12] = 1
    pred = gt.copy()
    pred[10:12, 10:12] = 0
    return {"a": (gt, gt), "b": (gt, pred), "c": (gt, None)}


def _folders(tmp_path):
    cases = _cases()
    for folder, index, suffix in (("gt", 0, "_0000"), ("pred", 1, "")):
        (tmp_path / folder).mkdir()
        for case, pair in cases.items():
            array = pair[index] if pair[index] is not None else np.zeros((16, 16), np.uint8)
            like = Image(array, (0.5, 0.7), np.diag([0.5, 0.7, 1.0]))
            save_image(tmp_path / folder / f"{case}{suffix}.nii.gz", array, like=like)
    return tmp_path / "gt", tmp_path / "pred"


def _tables(result):
    return {name: getattr(result, name) for name in ("per_case", "per_component")}


def _same(a, b):
    for name, table in _tables(a).items():
        assert table.drop(columns=["read_seconds", "compute_seconds"], errors="ignore").equals(
            _tables(b)[name].drop(columns=["read_seconds", "compute_seconds"], errors="ignore")
        ), name
    assert a.options == b.options


def test_former_keywords_warn_once_and_give_the_same_result(tmp_path):
    gt, pred = _folders(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = evaluate_dataset(
            gt, pred, ["dice", "hd95"], spacing="voxel", nsd_tolerance=2.0, gt_suffix="_0000", client=None,
            resume=False, progress=False,
        )  # fmt: skip
    deprecations = [
        w for w in caught if issubclass(w.category, DeprecationWarning) and "evaluate_dataset" in str(w.message)
    ]
    assert len(deprecations) == 1 and deprecations[0].filename == __file__
    assert str(deprecations[0].message) == (
        "evaluate_dataset(spacing='voxel', nsd_tolerance=2.0, gt_suffix='_0000', client=None, resume=False) is "
        "deprecated: use options=EvalOptions(spacing='voxel', nsd_tolerance=2.0), pairing=PairingOptions("
        "gt_suffix='_0000'), run=RunOptions(dask=None, resume=False)"
    )
    new = evaluate_dataset(
        gt,
        pred,
        options=EvalOptions(metrics=["dice", "hd95"], spacing="voxel", nsd_tolerance=2.0),
        pairing=PairingOptions(gt_suffix="_0000"),
        run=RunOptions(progress=False),
    )
    _same(old, new)
    assert list(new.per_case["case"]) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("former", "objects"),
    [
        ({"channel": 1}, {"maps": ProbabilityOptions(prob_channel=1)}),
        (
            {"candidates": "components", "thresholds": "0.5"},
            {"maps": ProbabilityOptions(candidates="components", thresholds="0.5")},
        ),
        (
            {"detection_rule": "iou:0.5", "connectivity": 4},
            {"options": EvalOptions(detection_rule="iou:0.5", connectivity=4)},
        ),
        ({"max_memory": "1G", "case_timeout": None}, {"run": RunOptions(max_memory="1G")}),
    ],
)
def test_each_former_keyword_goes_to_its_option_object(former, objects):
    cases = {k: v for k, v in _cases().items() if k != "c"}
    maps = {"probabilities": {k: g.astype(np.float32) * 0.9 for k, (g, _) in cases.items()}}
    extra = maps if any(k in former for k in ("channel", "candidates")) else {}
    if "channel" in former:  # a two-channel map: background, foreground
        extra = {
            "probabilities": {k: np.stack([1 - g * 0.9, g * 0.9]).astype(np.float32) for k, (g, _) in cases.items()}
        }
        cases = {k: (g, None) for k, (g, _) in cases.items()}
    with pytest.warns(DeprecationWarning, match=r"^evaluate_dataset\(.*\) is deprecated: use "):
        old = evaluate_dataset(cases, metrics=["dice"], progress=False, **extra, **former)
    new = evaluate_dataset(cases, metrics=["dice"], progress=False, **extra, **objects)
    _same(old, new)


def test_a_field_given_twice_is_an_error():
    with pytest.raises(ValueError, match="classes is given twice"):
        evaluate_dataset(_cases(), classes=[1], options=EvalOptions(classes=[1]), progress=False)
    with pytest.raises(ValueError, match="spacing is given twice"):
        evaluate_dataset(_cases(), spacing="voxel", options=EvalOptions(spacing=(1, 1)), progress=False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'spacings'"):
        evaluate_dataset(_cases(), spacings="voxel")
    with pytest.raises(TypeError, match="takes a RunOptions"):
        evaluate_dataset(_cases(), run={"workers": 2})


def test_resume_of_a_folder_written_with_the_former_keywords_takes_every_case(tmp_path):
    gt, pred = _folders(tmp_path)
    with pytest.warns(DeprecationWarning):
        first = evaluate_dataset(gt, pred, ["dice"], gt_suffix="_0000", out_dir=tmp_path / "out", progress=False)
    again = evaluate_dataset(
        gt,
        pred,
        options=EvalOptions(metrics=["dice"]),
        pairing=PairingOptions(gt_suffix="_0000"),
        run=RunOptions(out_dir=tmp_path / "out", resume=True, progress=False),
    )
    assert again.run.reused == 3 and again.run.evaluated == 0
    _same(first, again)


def test_case_output_is_typed_and_reads_as_the_former_dict():
    gt, pred = _cases()["b"]
    options = EvalOptions.build(["dice", "detection"])
    output = evaluate_task(CaseTask("b", gt, pred), options)
    assert isinstance(output, CaseOutput) and output["rows"] is output.rows and output.get("retry") is False
    assert dict(output) == output.to_dict() and list(output) == list(encode_output(output))
    encoded = encode_output(output)  # a record's bytes: the same through the typed output
    assert json.dumps(CaseOutput.from_dict(encoded).to_dict()) == json.dumps(encoded)
    failed = failed_output(CaseTask("x"), options, "broken")
    assert failed.rows[0]["error"] == "broken" and failed.components is None
    assert fingerprint(CaseTask("b", gt, pred), options)["options"] == options.key()


def test_option_objects_are_exported():
    for name in ("EvalOptions", "ProbabilityOptions", "RunOptions", "PairingOptions"):
        assert getattr(ccmetrics, name) is getattr(ccmetrics.campaign, name)
    assert ccmetrics.campaign.CaseOutput is CaseOutput


def test_an_options_object_pickled_with_the_former_field_names_reads_as_the_new_fields():
    """A state pickled by 0.1 (fields ``max_case_bytes``, ``nnunet_counts``, ``records``; ``channel``) unpickles
    into the new fields, so that ``key()`` (a record's fingerprint) keeps ``nnunet_summary``."""
    import copyreg
    import pickle

    from ccmetrics.campaign.probabilities import ProbabilityOptions

    new = EvalOptions.build(["dice"], nnunet_summary=True, max_memory=1e9)
    former = {"max_memory": "max_case_bytes", "nnunet_summary": "nnunet_counts", "metric_definitions": "records"}
    state = {former.get(k, k): v for k, v in vars(new).items()}
    assert "nnunet_counts" in state and "nnunet_summary" not in state
    old = copyreg.__newobj__(EvalOptions)
    old.__setstate__(state)  # what pickle does with the former state
    assert old == new and old.key() == new.key() and old.key()["nnunet_summary"] is True and old.max_memory == 1e9
    assert pickle.loads(pickle.dumps(new)) == new
    maps = ProbabilityOptions.build(None, None, pred_given=False, prob_channel=1)
    old_maps = copyreg.__newobj__(ProbabilityOptions)
    old_maps.__setstate__({("channel" if k == "prob_channel" else k): v for k, v in vars(maps).items()})
    assert old_maps == maps and old_maps.prob_channel == 1


def test_a_checked_options_object_keeps_the_default_rule_of_probability_maps(tmp_path):
    """Review of issue 40: ``EvalOptions.build()`` / ``.checked()`` wrote the rule ``overlap`` in, so passing such
    an object with probability maps lost picai_eval's ``iou:0.1`` default without a word."""
    import numpy as np

    from ccmetrics import evaluate_dataset

    gt = np.zeros((12, 12), np.uint8)
    gt[2:6, 2:6] = 1
    prob = np.where(gt > 0, 0.9, 0.05)
    cases = {"a": (gt, None)}
    for options in (
        EvalOptions(metrics=["dice", "detection"]),
        EvalOptions.build(["dice", "detection"]),
        EvalOptions(metrics=["dice", "detection"]).checked(),
    ):
        assert options.rule() == "overlap"
        result = evaluate_dataset(cases, probabilities={"a": prob}, options=options, progress=False)
        assert result.options["detection_rule"] == "iou:0.1"
    given = EvalOptions(metrics=["dice", "detection"], detection_rule="overlap").checked()
    result = evaluate_dataset(cases, probabilities={"a": prob}, options=given, progress=False)
    assert result.options["detection_rule"] == "overlap"  # a rule given stays
