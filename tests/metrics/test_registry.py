"""The metric registry, the table schema and the engine configuration: one home for every rule.

The end-to-end test registers metrics of a user's own in a plugin file, evaluates a data set with them
through the command line (in worker processes), and finds them in the tables, the summary, the plots, a
comparison and the report (opened in headless Chromium), with values checked against an independent
computation on the full image (the brute-force Voronoi partition and the function on each masked region).
"""

import dataclasses
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import brute_force_partition

import ccmetrics
from ccmetrics import EngineConfig, engine_config, evaluate, schema
from ccmetrics.formats.io import load_image
from ccmetrics.metrics import registry

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "data"

PLUGIN = '''
"""Metrics of a user's own: one function of the two region masks, one MONAI object."""
from monai.metrics import SurfaceDistanceMetric

from ccmetrics import register_metric


def volume_similarity(pred, gt, spacing):
    """1 - |V_pred - V_gt| / (V_pred + V_gt); 1 when both are empty."""
    total = float(pred.sum()) + float(gt.sum())
    return 1.0 - abs(float(pred.sum()) - float(gt.sum())) / total if total else 1.0


register_metric("volsim", volume_similarity, display="Volume similarity",
                description="volume similarity of the region's masks")
register_metric("masd", SurfaceDistanceMetric(symmetric=True), kind="distance", display="MONAI ASSD")
'''


def volume_similarity(pred, gt):
    total = float(pred.sum()) + float(gt.sum())
    return 1.0 - abs(float(pred.sum()) - float(gt.sum())) / total if total else 1.0


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ccmetrics", *map(str, args)], capture_output=True, text=True, cwd=cwd)


# ---------------------------------------------------------------- the registry


def test_every_builtin_metric_has_one_record():
    assert registry.names(per_region=True) == ("dice", "iou", "nsd", "hd", "hd95", "assd")
    assert registry.names(per_region=False) == ("pq", "lesion_dice", "detection", "pet")
    distances = {c.name for m in registry.metrics() for c in m.columns if c.is_distance}
    assert distances == {"hd", "hd95", "assd", "lesion_hd95"}
    lower = {c.name for m in registry.metrics() for c in m.columns if c.higher_is_better is False}
    assert lower == {
        "hd",
        "hd95",
        "assd",
        "lesion_hd95",
        "fp_volume",
        "fn_volume",
        "split_lesions",
        "merged_components",
    }


def test_case_level_columns_are_what_evaluate_reports():
    gt = np.zeros((20, 20), bool)
    gt[2:8, 2:8] = True
    gt[14:16, 14:16] = True
    pred = gt.copy()
    pred[14:16, 14:16] = False
    pred[10, 18] = True
    result = evaluate(pred=pred, gt=gt, metrics=["detection", "lesion_dice", "pq", "dice"])
    expected = [c.name for name in ("pq", "lesion_dice", "detection") for c in registry.get(name).columns]
    assert list(result.case_scores) == expected  # the registry's order, whatever the order asked
    d = result.details["detection"]
    assert (result.case_scores["fp_volume"], result.case_scores["sensitivity"]) == (1.0, 0.5)  # 1 voxel, no spacing
    assert d.false_positive_volume == 1.0
    assert result.metrics == ["dice"]


def test_names_facts_and_errors():
    assert registry.display_name("cc_lesion_hd95") == "CC-Lesion HD95"
    assert registry.unit_label("fn_volume", spacing=False) == "voxels"
    assert registry.worst_value("assd", 12.5) == 12.5 and registry.worst_value("nsd", 12.5) == 0.0
    assert [m.name for m in registry.resolve("HD95")] == ["hd95"]
    with pytest.raises(ValueError, match="unknown metric 'dise'; the metrics are dice, iou"):
        registry.get("dise")
    with pytest.raises(ValueError, match="metrics is empty"):
        registry.resolve([])
    with pytest.raises(ValueError, match="built-in metric"):
        registry.register_metric("dice", lambda p, g, s: 0.0)
    with pytest.raises(ValueError, match="starting with a letter and not with 'cc_'"):
        registry.register_metric("cc_x", lambda p, g, s: 0.0)
    with pytest.raises(ValueError, match="kind must be 'overlap'"):
        registry.register_metric("x", lambda p, g, s: 0.0, kind="ratio")
    with pytest.raises(ValueError, match="needs its best and worst values"):
        registry.register_metric("x", lambda p, g, s: 0.0, kind="score")
    with pytest.raises(ValueError, match="best and worst are fixed"):
        registry.register_metric("x", lambda p, g, s: 0.0, best=0.0)
    for taken in ("volume", "status", "case", "detected", "worst_distance", "pred_volume_ml", "gt_label"):
        with pytest.raises(ValueError, match=f"'{taken}' is a column of the tables"):
            registry.register_metric(taken, lambda p, g, s: 0.0)
    with pytest.raises(ValueError, match="not with 'cc_' or 'delta_'"):
        registry.register_metric("delta_dice", lambda p, g, s: 0.0)
    with pytest.raises(ValueError, match="already a column of the metric 'detection'"):
        registry.register_metric("f1", lambda p, g, s: 0.0)
    with pytest.raises(TypeError, match="function compute"):
        registry.register_metric("x", 3.0)
    assert "x" not in registry.names()


def test_registered_function_equals_brute_force_on_the_masked_full_image():
    rng = np.random.default_rng(5)
    gt = np.zeros((30, 26, 20), bool)
    for _ in range(6):
        c = rng.integers(3, 17, 3)
        gt[c[0] : c[0] + rng.integers(1, 6), c[1] : c[1] + rng.integers(1, 6), c[2] : c[2] + rng.integers(1, 4)] = True
    pred = np.roll(gt, 1, axis=0) | (rng.random(gt.shape) < 0.01)
    registry.register_metric("volsim_test", lambda p, g, s: volume_similarity(p, g), display="VS")
    try:
        result = evaluate(pred=pred, gt=gt, metrics=["dice", "volsim_test"], spacing=(0.8, 0.8, 2.0))
        regions, _ = brute_force_partition(ccmetrics.label_components(gt)[0], spacing=(0.8, 0.8, 2.0))
        expected = [
            volume_similarity(pred & (regions == c), gt & (regions == c)) for c in range(1, result.n_components + 1)
        ]
        assert result.per_component["volsim_test"].tolist() == expected
        assert result.standard["volsim_test"] == volume_similarity(pred, gt)
        assert result.cc["volsim_test"] == pytest.approx(np.mean(expected), rel=1e-15)
        empty = evaluate(
            pred=pred, gt=np.zeros_like(gt), metrics=["volsim_test"]
        )  # the empty-GT rule: worst, 0 for a score
        assert empty.cc["volsim_test"] == 0.0 and empty.empty_gt
    finally:
        registry.unregister("volsim_test")
    with pytest.raises(ValueError, match="unknown metric 'volsim_test'"):
        evaluate(pred=pred, gt=gt, metrics=["volsim_test"])


def test_markdown_table_is_the_documentation_list():
    page = (ROOT / "docs" / "metrics.md").read_text()
    assert registry.markdown_table() in page, "docs/metrics.md's table differs: paste registry.markdown_table()"


# ---------------------------------------------------------------- the schema


def test_schema_names_every_column_written(tmp_path):
    result = ccmetrics.evaluate_dataset(EXAMPLES / "gt", EXAMPLES / "pred", ["dice", "hd95", "pq"], progress=False)
    assert list(result.per_case.columns) == registry.table_columns(schema.PER_CASE, ["dice", "hd95", "pq"])
    assert list(result.per_component.columns) == registry.table_columns(schema.PER_COMPONENT, ["dice", "hd95", "pq"])
    assert list(result.summary().reset_index().columns) == schema.SUMMARY.columns()
    result.write(tmp_path, plots=False)
    back = ccmetrics.DatasetResult.read(tmp_path)
    pd.testing.assert_frame_equal(back.summary(), result.summary())
    table = pd.read_csv(tmp_path / "per_case.csv").drop(columns=["status"])
    table.to_csv(tmp_path / "per_case.csv", index=False)
    with pytest.raises(ValueError, match=r"per_case.csv is not the file its run wrote"):  # the manifest's checksum
        ccmetrics.DatasetResult.read(tmp_path)
    (tmp_path / "manifest.json").unlink()  # tables without a manifest (an earlier ccmetrics): the schema checks them
    with pytest.raises(ValueError, match=r"per_case.csv has no column 'status' \(ok, flagged or error\)"):
        ccmetrics.DatasetResult.read(tmp_path)
    table = pd.read_csv(tmp_path / "per_component.csv").drop(columns=["detected"])
    result.per_case.to_csv(tmp_path / "per_case.csv", index=False)
    table.to_csv(tmp_path / "per_component.csv", index=False)
    with pytest.raises(ValueError, match="per_component.csv has no column 'detected'"):
        ccmetrics.DatasetResult.read(tmp_path)
    result.per_component.to_csv(tmp_path / "per_component.csv", index=False)
    result.per_case.drop(columns=["cc_hd95"]).to_csv(tmp_path / "per_case.csv", index=False)
    with pytest.raises(ValueError, match="no column 'cc_hd95', although the evaluation's metrics produce it"):
        ccmetrics.DatasetResult.read(tmp_path)


def _literals(path):
    """String collections and string-keyed dicts written in a module (its AST)."""
    import ast

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(values) == len(node.elts) and values:
                yield "collection", values
        elif isinstance(node, ast.Dict):
            pairs = [
                (k.value, v.value)
                for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str)
            ]
            if pairs:
                yield "dict", pairs


def test_no_rule_is_written_twice():
    """Which metrics are distances or lower-is-better, display names and engine thresholds: each written once."""
    lower = {c.name for m in registry.metrics() for c in m.columns if c.higher_is_better is False}
    display = {c.name: c.display for m in registry.metrics() for c in m.columns}
    threshold = re.compile(
        r"^(?!DEFAULT_)_?[A-Z_]*(_FROM|_MIN_QUERIES|_MAX_RATIO|_MAX_SITES|_BELOW|_RUNS|_BOX|_BATCH|_THREADS|"
        r"_POINTS|_AFTER|_ABOVE|_UNTIL|_MIN_[A-Z]+|_MAX_[A-Z]+)\s*=",
        re.M,
    )
    modules = [p for p in (ROOT / "ccmetrics").rglob("*.py")] + list((ROOT / "simulations").rglob("*.py"))
    # the homes of the metrics' facts: the registry's model and functions, and the built-in metrics' records
    homes = {ROOT / "ccmetrics" / "metrics" / name for name in ("registry.py", "builtin_metrics.py")}
    for path in modules:
        for kind, values in [] if path in homes else _literals(path):
            if kind == "collection":
                cc_free = {v[3:] if v.startswith("cc_") else v for v in values}
                assert not (len(cc_free) >= 2 and cc_free <= lower), f"{path}: lower-is-better metrics {values}"
            else:
                named = [(k, v) for k, v in values if display.get(k) == v or display.get(k, "\0") in v]
                assert len(named) < 2, f"{path}: display names outside the registry {named}"
        if path.name != "config.py":
            assert not threshold.search(path.read_text()), (
                f"{path}: an engine threshold outside ccmetrics.engine.config"
            )


# ---------------------------------------------------------------- the engine configuration


def test_engine_config_is_scoped_and_checked():
    default = ccmetrics.engine.config.current()
    with engine_config(grouped_from=1) as inner:
        assert ccmetrics.engine.config.current() is inner and inner.grouped_from == 1
        with engine_config(EngineConfig(threads=3)):
            assert (
                ccmetrics.engine.config.current().threads == 3 and ccmetrics.engine.config.current().grouped_from == 64
            )
        assert ccmetrics.engine.config.current().grouped_from == 1
    assert ccmetrics.engine.config.current() is default
    with pytest.raises(TypeError, match="no field 'grouped'"):
        with engine_config(grouped=1):
            pass
    with pytest.raises(ValueError, match="whole number >= 0"):
        EngineConfig(kernels_from=-1)
    with pytest.raises(ValueError, match="at least 1"):
        EngineConfig(max_threads=0)


def test_every_engine_path_gives_the_same_numbers():
    """Each threshold forced to both extremes, and the block-certified nearest-site search (which the dense
    transform hides when both are on): the values stay the same bit for bit."""
    from ccmetrics.synthetic import lesion_case

    gt, pred = lesion_case((44, 40, 30), n_lesions=14, radius_range=(1.0, 6.0), seed=11)
    pred = pred.copy()
    pred[34:] = True  # many prediction voxels outside the GT: the nearest-site search does real work
    metrics = ["dice", "iou", "nsd", "hd", "hd95", "assd", "pq", "lesion_dice", "detection"]
    never = EngineConfig(
        threads=1,
        grouped_from=1 << 40,
        block_min_queries=1 << 40,
        span_map_ratio=0,
        dense_runs=0,
        pad_below=0,
    ).with_kernels(False)
    always = EngineConfig(
        threads_from=0,
        threads=2,
        thread_batch_points=0,
        grouped_from=1,
        global_after=0,
        dense_max_ratio=1 << 20,
        block_min_queries=1,
        span_map_ratio=1 << 20,
        dense_runs=1 << 40,
        pad_below=1 << 40,
    ).with_kernels(True)
    blocks = dataclasses.replace(always, dense_min_queries=1 << 40, compile_partition_from=1 << 40)
    with engine_config(never):
        a = evaluate(pred=pred, gt=gt, metrics=metrics, spacing=(0.8, 0.9, 2.1))
    for config in (always, blocks):
        with engine_config(config):
            b = evaluate(pred=pred, gt=gt, metrics=metrics, spacing=(0.8, 0.9, 2.1))
        assert a.per_component.equals(b.per_component)
        assert a.cc == b.cc and a.standard == b.standard
        assert a.case_scores == b.case_scores


# ---------------------------------------------------------------- a metric of one's own, end to end


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin")
    (root / "lab_metrics.py").write_text(PLUGIN)
    out = root / "results"
    done = run_cli(
        "evaluate",
        EXAMPLES / "gt",
        EXAMPLES / "pred",
        "--out",
        out,
        "--metrics",
        "dice,assd,volsim,masd,detection",
        "--plugin",
        root / "lab_metrics.py",
        "--workers",
        "2",
        "--bootstrap",
        "200",
    )
    assert done.returncode == 0, done.stderr
    return root, out, done.stdout


@pytest.fixture(scope="module")
def plugin_run_b(plugin_run):
    """The second model of the example data, evaluated with the same plugin."""
    root, _, _ = plugin_run
    out = root / "results_b"
    args = ["--metrics", "dice,volsim", "--plugin", root / "lab_metrics.py", "--quiet", "--no-plots"]
    done = run_cli("evaluate", EXAMPLES / "gt", EXAMPLES / "pred_b", "--out", out, *args)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.slow
def test_plugin_metric_in_tables_summary_and_plots(plugin_run):
    root, out, stdout = plugin_run
    per_component = pd.read_csv(out / "per_component.csv", dtype={"case": str})
    per_case = pd.read_csv(out / "per_case.csv", dtype={"case": str})
    assert list(per_component.columns[-4:]) == ["dice", "assd", "volsim", "masd"]
    for column in ("volsim", "cc_volsim", "masd", "cc_masd"):
        assert column in per_case
    checked = 0
    for case, rows in per_component.groupby("case"):  # values: the function on each masked region of the image
        gt = load_image(EXAMPLES / "gt" / f"{case}.nii.gz").array != 0
        pred_file = EXAMPLES / "pred" / f"{case}.nii.gz"  # one case has none: evaluated as an empty prediction
        pred = load_image(pred_file).array != 0 if pred_file.is_file() else np.zeros_like(gt)
        regions, _ = brute_force_partition(ccmetrics.label_components(gt)[0], spacing=(2.0, 2.0, 3.0))
        expected = [volume_similarity(pred & (regions == c), gt & (regions == c)) for c in rows["component"]]
        np.testing.assert_allclose(rows["volsim"], expected, rtol=1e-15)
        row = per_case[per_case["case"] == case].iloc[0]
        assert row["volsim"] == pytest.approx(volume_similarity(pred, gt), rel=1e-15)
        assert row["cc_volsim"] == pytest.approx(np.mean(expected), rel=1e-12)
        checked += len(rows)
    assert checked == len(per_component) > 10
    # MONAI's symmetric surface distance is the ASSD: computed by MONAI on every region's crop, it equals ours
    finite = np.isfinite(per_component["assd"])
    np.testing.assert_allclose(per_component.loc[finite, "masd"], per_component.loc[finite, "assd"], rtol=1e-5)
    assert np.all(~np.isfinite(per_component.loc[~finite, "masd"]))  # a missed lesion: inf (or MONAI's nan)
    doc = json.loads((out / "summary.json").read_text())
    assert doc["columns"]["masd"] == {
        "display": "MONAI ASSD",
        "kind": "distance",
        "higher_is_better": False,
        "best": 0.0,
        "worst": "worst_distance",
        "unit": "length",
        "cc": True,
    }
    rows = [r for r in doc["summary"] if r["metric"] == "volsim"]
    assert [r["aggregation"] for r in rows] == ["standard", "cc_patient", "cc_pooled"]
    evaluated = per_case[(per_case["status"] != "error") & ~per_case["empty_gt"].astype(bool)]
    assert rows[1]["mean"] == pytest.approx(evaluated["cc_volsim"].mean(), rel=1e-12)
    assert (out / "plots" / "standard_vs_cc_volsim.png").is_file()
    assert (out / "plots" / "standard_vs_cc_masd.png").is_file()
    assert re.search(r"volsim\s+cc_pooled", stdout)


@pytest.mark.slow
def test_plugin_metric_in_comparison_and_report(plugin_run, plugin_run_b, tmp_path):
    """Another process, which never registered the metrics, reads their facts from the folder."""
    from scipy import stats

    root, out, _ = plugin_run
    done = run_cli("compare", out, out, "--metric", "cc_masd", "--names", "a,b")
    assert done.returncode == 0, done.stderr
    assert "cc_masd (lower is better)" in done.stdout
    done = run_cli("compare", out, plugin_run_b, "--metric", "cc_volsim", "--names", "a,b")
    assert done.returncode == 0, done.stderr
    a, b = (
        pd.read_csv(o / "per_case.csv", dtype={"case": str}).dropna(subset=["cc_volsim"]) for o in (out, plugin_run_b)
    )
    a, b = (t[t["n_components"] > 0].set_index("case")["cc_volsim"] for t in (a, b))  # empty-GT cases left out
    reference = stats.wilcoxon(a, b[a.index])
    assert f"cc_volsim (higher is better) on {len(a)} paired cases" in done.stdout
    assert f"Wilcoxon test: statistic {reference.statistic:.4g}, p = {reference.pvalue:.4g}" in done.stdout
    assert "volsim" not in registry.names()  # this process never loaded the plugin either
    from ccmetrics.report import build_model, write_report

    model = build_model(out)
    assert {"key": "volsim", "name": "Volume similarity"} in model["metrics"]
    assert model["is_distance"] == {"dice": False, "assd": True, "volsim": False, "masd": True}
    html = tmp_path / "report.html"
    write_report(out, html)
    from _browser import browser

    summary = json.loads((out / "summary.json").read_text())["summary"]
    rows = [r for r in summary if r["metric"] in ("volsim", "cc_volsim")]
    assert len(rows) == 3  # standard, CC per patient, CC pooled
    driver = browser(tmp_path)
    try:
        driver.get(html.as_uri())
        text = driver.find_element("tag name", "body").text
        for r in rows:  # every summary value of the plugin metric, as the folder holds it
            row = driver.find_element("css selector", f'tr[data-key="{r["class"]}/{r["metric"]}/{r["aggregation"]}"]')
            for stat in ("n", "mean", "median", "ci_low", "ci_high"):
                shown = row.find_element("css selector", f'[data-stat="{stat}"]').get_attribute("data-value")
                assert float(shown) == r[stat]
    finally:
        driver.quit()
    assert "CC-Volume similarity" in text and "CC-MONAI ASSD" in text


@pytest.mark.slow
def test_plugin_errors_say_the_fix(tmp_path):
    done = run_cli("evaluate", EXAMPLES / "gt", EXAMPLES / "pred", "--out", tmp_path / "o", "--metrics", "volsim")
    assert done.returncode == 2 and "unknown metric 'volsim'" in done.stderr
    assert "--plugin MODULE_OR_FILE" in done.stderr and "register_metric" not in done.stderr
    done = run_cli(
        "evaluate", EXAMPLES / "gt", EXAMPLES / "pred", "--out", tmp_path / "o", "--plugin", tmp_path / "missing.py"
    )
    assert done.returncode == 2 and "plugin file" in done.stderr and "does not exist" in done.stderr


# ---------------------------------------------------------------- the review's cases


def test_registered_monai_object_is_a_distance_and_keeps_no_buffer():
    from monai.metrics import DiceMetric, HausdorffDistanceMetric

    gt = np.zeros((16, 16), bool)
    gt[2:6, 2:6] = True
    gt[10:13, 10:13] = True
    pred = np.roll(gt, 1, axis=1)
    record = registry.register_metric("monai_hd", HausdorffDistanceMetric())  # kind inferred: a distance
    try:
        assert record.kind == "distance" and not record.higher_is_better and record.worst == "worst_distance"
        for _ in range(4):
            result = evaluate(pred=pred, gt=gt, metrics=["hd", "monai_hd"])
        assert result.per_component["monai_hd"].tolist() == result.per_component["hd"].tolist()
        assert record.compute.metric.get_buffer() is None or len(record.compute.metric.get_buffer()) == 0
        empty = evaluate(
            pred=pred, gt=np.zeros_like(gt), metrics=["monai_hd"]
        )  # an empty GT with a prediction: the worst
        assert empty.cc["monai_hd"] == empty.worst_distance
    finally:
        registry.unregister("monai_hd")
    with pytest.raises(ValueError, match="is a distance; kind='overlap' contradicts it"):
        registry.register_metric("monai_hd", HausdorffDistanceMetric(), kind="overlap")
    with pytest.raises(ValueError, match="is not a distance; kind='distance' contradicts it"):
        registry.register_metric("monai_dice", DiceMetric(), kind="distance")


def test_a_lower_is_better_score_has_its_own_worst_value():
    registry.register_metric(
        "miss_rate", lambda p, g, s: float((g & ~p).sum()) / max(int(g.sum()), 1), kind="score", best=0.0, worst=1.0
    )
    try:
        gt = np.zeros((10, 10), bool)
        gt[2:5, 2:5] = True
        assert not registry.get("miss_rate").higher_is_better
        empty_gt = evaluate(
            pred=gt, gt=np.zeros_like(gt), metrics=["miss_rate"]
        )  # a false positive on a healthy case: worst
        assert empty_gt.cc["miss_rate"] == 1.0
        assert evaluate(pred=np.zeros_like(gt), gt=np.zeros_like(gt), metrics=["miss_rate"]).cc["miss_rate"] == 0.0
    finally:
        registry.unregister("miss_rate")


def test_registering_the_same_code_again_replaces_it(tmp_path):
    (tmp_path / "reloaded_metrics.py").write_text(
        PLUGIN.replace("volsim", "volsim_reload").replace('"masd"', '"masd_reload"')
    )
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("reloaded_metrics")
        importlib.reload(module)  # a notebook cell run again
        assert registry.get("volsim_reload").compute is module.volume_similarity
        with pytest.raises(ValueError, match="registered already"):
            registry.register_metric("volsim_reload", lambda p, g, s: 0.0)  # other code under the name
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("volsim_reload", "masd_reload"):
            registry.unregister(name)


def test_workers_get_the_engine_configuration_and_unpicklable_metrics_fail_early(tmp_path):
    (tmp_path / "engine_probe.py").write_text(
        "from ccmetrics import register_metric\nfrom ccmetrics.engine.config import current\n\n\n"
        "def grouped_from(pred, gt, spacing):\n    return float(current().grouped_from)\n\n\n"
        "register_metric('probe_grouped_from', grouped_from, kind='score', best=0.0, worst=1e9)\n"
    )
    registry.load_plugin(str(tmp_path / "engine_probe.py"))
    assert sys.path[-1] == str(tmp_path)  # appended: the plugin's folder shadows no installed module
    gt = np.zeros((12, 12), np.uint8)
    gt[2:5, 2:5] = 1
    gt[8:10, 8:10] = 1
    cases = {f"c{i}": (gt, gt) for i in range(3)}
    try:
        with engine_config(grouped_from=7):
            result = ccmetrics.evaluate_dataset(cases, metrics=["probe_grouped_from"], workers=2, progress=False)
        assert (result.per_component["probe_grouped_from"] == 7.0).all() and len(result.per_component) == 6
        registry.register_metric("lambda_metric", lambda p, g, s: 0.0)
        with pytest.raises(ValueError, match="'lambda_metric' cannot be sent to worker processes"):
            ccmetrics.evaluate_dataset(cases, metrics=["lambda_metric"], workers=2, progress=False)
        serial = ccmetrics.evaluate_dataset(cases, metrics=["lambda_metric"], progress=False)  # fine in-process
        assert (serial.per_component["lambda_metric"] == 0.0).all()
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("probe_grouped_from", "lambda_metric"):
            if name in registry.names():
                registry.unregister(name)


def test_metric_columns_keep_their_order_by_engine():
    gt = np.zeros((8, 8), bool)
    gt[2:4, 2:4] = True
    result = evaluate(pred=np.roll(gt, 1, 0), gt=gt, metrics=["hd", "dice"])
    assert list(result.per_component.columns) == ["volume", "detected", "dice", "hd"]
    assert (
        list(result.standard) == ["dice", "hd"]
        and result.metrics == ["hd", "dice"]
        and list(result.cc) == ["hd", "dice"]
    )


def test_surface_reductions_read_groups_where_the_bounds_say():
    from ccmetrics.engine.surface import grouped_surface_scores, surface_scores

    values = np.float32([5, 1, 2, 3])
    got = grouped_surface_scores(values, [2, 4], np.float32([1]), [0, 1], ["hd", "hd95"], 1.0)
    # the group holds 2, 3 (pred->GT) and 1 (GT->pred): HD 3; HD95 the larger 95th percentile, 2 + 0.95 in float32
    assert got == [{"hd": 3.0, "hd95": float(np.float32(2.95))}]
    assert got == [surface_scores(values[2:], np.float32([1]), ["hd", "hd95"], 1.0)]


def test_nuclei_pairs_follow_the_one_empty_set_rule():
    from ccmetrics.nuclei.metrics import pair_distances

    g = np.array([[0.0, 0.0]])
    p = np.array([[0.0, 3.0]])
    hd, hd95 = pair_distances(g, np.array([0, 1, 1]), p, np.array([0, 0, 1]), np.array([0, 1]), np.array([0, 0]))
    assert hd.tolist() == [np.inf, 0.0] and hd95.tolist() == [np.inf, 0.0]  # one side empty; both empty


# the constants these modules held before the registry (cbaf938), written out by hand; the shims compute them
# from the registry, so they also hold the columns added since (the detection metric's split and merge counts)
ADDED = ("split_lesions", "merged_components")
FORMER_NAMES = [
    ("ccmetrics.metrics.aggregation", "DISTANCE_METRICS", ("hd", "hd95", "assd")),
    (
        "ccmetrics.metrics.aggregation",
        "BEST_VALUE",
        {"dice": 1.0, "iou": 1.0, "nsd": 1.0, "hd": 0.0, "hd95": 0.0, "assd": 0.0},
    ),
    (
        "ccmetrics.analysis.stats",
        "LOWER_IS_BETTER",
        frozenset({"hd", "hd95", "assd", "lesion_hd95", "fp_volume", "fn_volume", *ADDED}),
    ),
    ("ccmetrics.analysis.plots", "OVERLAP", ("dice", "iou", "nsd")),
    ("ccmetrics.analysis.plots", "DISTANCE", ("hd", "hd95", "assd")),
    (
        "ccmetrics.report.data",
        "METRIC_LABELS",
        {"dice": "Dice", "iou": "IoU", "nsd": "NSD", "hd": "HD", "hd95": "HD95", "assd": "ASSD"}
        | {"sensitivity": "Sensitivity", "precision": "Precision", "f1": "F1", "pq": "PQ", "sq": "SQ", "rq": "RQ"}
        | {"lesion_dice": "Lesion Dice", "lesion_hd95": "Lesion HD95", "fp_volume": "FP volume"}
        | {"fn_volume": "FN volume"}
        | {"split_lesions": "Split lesions", "merged_components": "Merged components"},
    ),
    (
        "ccmetrics.metrics.case",
        "CASE_METRICS",
        {
            "pq": ("pq", "sq", "rq"),
            "lesion_dice": ("lesion_dice", "lesion_hd95"),
            "detection": ("sensitivity", "precision", "f1", "fp_volume", "fn_volume", *ADDED),
        },
    ),
    ("ccmetrics.metrics.overlap", "OVERLAP_METRICS", ("dice", "iou")),
    ("ccmetrics.engine.surface", "SURFACE_METRICS", ("nsd", "hd", "hd95", "assd")),
]


@pytest.mark.parametrize("module, name, former", FORMER_NAMES, ids=[f"{m}.{n}" for m, n, _ in FORMER_NAMES])
def test_former_names_keep_their_values_with_a_warning_at_the_caller(module, name, former):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{name} is deprecated") as caught:
        value = getattr(mod, name)
    assert value == former
    assert caught[0].filename == __file__  # the warning points at the code that read the name
    with pytest.raises(AttributeError, match="has no attribute 'NOT_A_NAME'"):
        mod.NOT_A_NAME  # noqa: B018


def test_former_parse_metrics_splits_names_cases_and_monai_objects():
    from monai.metrics import SurfaceDistanceMetric

    with pytest.warns(DeprecationWarning):
        from ccmetrics.metrics.case import parse_metrics
    assert parse_metrics(["dice", "pq", "hd95"])[:2] == (["dice", "hd95"], ["pq"])
    names, cases, objects = parse_metrics(["nsd", SurfaceDistanceMetric()])
    assert (names, cases, list(objects)) == (["nsd"], [], ["SurfaceDistanceMetric"])
