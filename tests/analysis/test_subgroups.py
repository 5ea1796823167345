"""Subgroup summaries (--metadata, --group-by): each group's summary equals the overall computation
restricted to the group's cases, done here from the per-case and per-lesion tables directly."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ccmetrics import evaluate_dataset
from ccmetrics.analysis.stats import bootstrap_ci, bootstrap_ci_pooled
from ccmetrics.analysis.subgroups import MISSING_GROUP, case_groups, read_metadata

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "data"
META = "case,scanner,site\ncase_001,A,x\ncase_002,B,x\ncase_003,A,y\ncase_006,B,\n"


@pytest.fixture(scope="module")
def result():
    return evaluate_dataset(EXAMPLES / "gt", EXAMPLES / "pred", ["dice", "hd95", "detection"], progress=False)


def test_group_summaries_equal_the_restricted_computation(result, tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text(META)
    table = result.group_summary(path, ["scanner"], n_resamples=300, seed=3)
    groups = case_groups(read_metadata(path), ["scanner"], result.per_case["case"].tolist())
    assert groups["case_004"] == (MISSING_GROUP,) and groups["case_005"] == (MISSING_GROUP,)
    assert sorted(table["scanner"].unique()) == sorted([MISSING_GROUP, "A", "B"])
    cases = result.per_case
    scored = cases[(cases["status"] != "error") & ~cases["empty_gt"].astype(bool)]
    for name in ("A", "B", MISSING_GROUP):
        members = [c for c, g in groups.items() if g == (name,)]
        rows = table[table["scanner"] == name].set_index(["metric", "aggregation"])
        assert (rows["n_cases"] == len(members)).all()
        here = scored[scored["case"].isin(members)]
        patient = here["cc_dice"].to_numpy(float)
        row = rows.loc[("dice", "cc_patient")]
        assert row["n"] == len(patient) and row["mean"] == pytest.approx(patient.mean())
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(
            bootstrap_ci(patient, n_resamples=300, seed=3), nan_ok=True
        )
        comps = result.per_component[result.per_component["case"].isin(here["case"])]
        pooled = comps["dice"].to_numpy(float)
        row = rows.loc[("dice", "cc_pooled")]
        assert row["n"] == len(pooled) and row["mean"] == pytest.approx(pooled.mean())
        want = bootstrap_ci_pooled(pooled, comps["case"].to_numpy(), n_resamples=300, seed=3)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(want, nan_ok=True)
        sens = here["sensitivity"].dropna().to_numpy(float)
        assert rows.loc[("sensitivity", "case"), "mean"] == pytest.approx(sens.mean())
    # two columns: every combination present; an empty cell is its own value
    both = result.group_summary(path, ["scanner", "site"], n_resamples=50)
    assert ("B", "(empty)") in set(zip(both["scanner"], both["site"]))


def test_metadata_errors(result, tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text(META)
    with pytest.raises(ValueError, match="no column 'sex'; its columns: case, scanner, site"):
        result.group_summary(path, "sex")
    path.write_text("case,scanner\ncase_001,A\ncase_001,B\n")
    with pytest.raises(ValueError, match="twice"):
        read_metadata(path)
    path.write_text("id,metric\ncase_001,A\n")
    with pytest.raises(ValueError, match="clash"):
        result.group_summary(path, "metric")


@pytest.mark.slow
def test_cli_metadata_group_by(tmp_path):
    meta = tmp_path / "meta.csv"
    meta.write_text(META)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ccmetrics", "evaluate", str(EXAMPLES / "gt"), str(EXAMPLES / "pred")]
    cmd += ["--out", str(out), "--metrics", "dice", "--bootstrap", "100"]  # not --quiet: it leaves out the summary
    run = subprocess.run([*cmd, "--metadata", str(meta), "--group-by", "scanner"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "Summary by scanner" in run.stdout and MISSING_GROUP in run.stdout
    doc = json.loads((out / "summary.json").read_text())
    assert doc["groups"]["by"] == ["scanner"]
    frame = pd.DataFrame(doc["groups"]["summary"])
    assert set(frame["scanner"]) == {"A", "B", MISSING_GROUP}
    assert (out / "plots" / "by_group_cc_dice.png").is_file()
    bad = subprocess.run([*cmd, "--metadata", str(meta), "--overwrite"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--metadata and --group-by go together" in bad.stderr
    bad = subprocess.run(
        [*cmd, "--overwrite", "--metadata", str(meta), "--group-by", "sex"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "no column 'sex'" in bad.stderr
    assert not np.isnan(frame["mean"]).all()
