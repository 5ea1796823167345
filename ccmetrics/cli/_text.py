"""The text ``ccmetrics evaluate`` prints: counts, problems, the summary table, subgroups and lesion sizes.

Ids, class names and messages are shown through :func:`ccmetrics._escaping.printable` (each on its one line);
stdout escapes any other control character (``_common._PipeGuard``)."""

from __future__ import annotations

import os
import re

from .._escaping import printable
from .._words import count, noun

__all__ = ["report"]


def report(result, seconds: float, *, summary=None, **summary_options) -> str:
    """The text ``ccmetrics evaluate`` prints: counts, problems, and the summary table.

    ``summary``: the ``result.summary()`` frame when computed already, else computed with ``summary_options``.
    """
    import pandas as pd

    from .. import schema

    n = result.counts()
    pending = len(getattr(result.run, "pending", ()) or ())
    first = f"{counted(n, seconds)}; {n['empty_gt']} with an empty GT, {n['missing_prediction']} without prediction"
    if pending:  # a stopped run: what was never evaluated comes first
        first = (
            f"Interrupted after {seconds:.1f} s: {pending} of {n['cases'] + pending} cases never evaluated; the "
            f"{count(n['cases'], 'finished case')}: {n['evaluated']} evaluated ({n['flagged']} flagged), "
            f"{n['failed']} failed; {n['empty_gt']} with an empty GT, {n['missing_prediction']} without prediction"
        )
    lines = [first]
    lines += _problems(result.per_case, result.class_names)
    lines += _ignored(result.unpaired_files)
    if summary is None:
        summary = result.summary(**summary_options)
    if len(summary) and not (summary[schema.N] > 0).any():  # no case with lesions evaluated: no table of NaN
        lines += ["", "No summary: no case with GT lesions was evaluated."]
    elif len(summary):
        table = summary.reset_index()
        table = _with_class_names(table, result.class_names)
        table = _with_ci_text(table)
        with pd.option_context("display.width", 200):
            text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}")
        options = result.eval_options
        units = "distances and volumes in voxels" if options.spacing == "voxel" else "distances in mm, volumes in ml"
        detected = f"; detected: {options.rule()}" if "detection" in options.metrics else ""
        lines += [
            "",
            f"Summary over cases with GT lesions ({units}; CC: patient = mean of case means, pooled = "
            f"all lesions; a missed lesion's distance = the worst distance{detected}):",
            text,
        ]
    empty = result.empty_gt_summary()
    for c, row in empty.iterrows():
        if row[schema.N]:
            ml = row[schema.FP_VOLUME_ML_MEAN]
            volume = f"{ml:.4g} ml" if ml == ml else f"{row[schema.FP_VOLUME_VOXELS_MEAN]:.4g} voxels"
            n_empty = int(row[schema.N])
            lines.append(
                f"\nClass {c}: {count(n_empty, 'empty-GT case')}, "
                f"{int(row[schema.WITH_FALSE_POSITIVE])} with a false positive (mean false-positive volume "
                f"{volume}); not in the means above"
            )
    return "\n".join(lines)


def counted(n: dict, seconds: float) -> str:
    """The first words of what ``evaluate`` prints: ``6 cases in 0.2 s: 6 evaluated (2 flagged), 0 failed``."""
    return (
        f"{count(n['cases'], 'case')} in {seconds:.1f} s: {n['evaluated']} evaluated "
        f"({n['flagged']} flagged), {n['failed']} failed"
    )


#: the error of a prediction that holds probabilities (``ccmetrics._inputs.as_binary_mask``): its value
_PROBABILITIES = re.compile(r"^pred must be a binary mask, but it holds non-binary values such as ([^;]+);")
#: more ignored files than this are counted by extension in one line, not listed one per line
_IGNORED_LISTED = 3


def _ignored(names: list[str]) -> list[str]:
    """The files the pairing left out: one line each for up to three, else one line that counts them by kind
    (``ignored 60 files left out (60 .pkl)``; all of them are in ``summary.json``'s ``ignored_files``).

    >>> _ignored(["p/a.pkl", "p/b.pkl", "p/c.json", "p/sub/", "p/d.pkl"])  # doctest: +ELLIPSIS
    ['  ignored  4 files left out (3 .pkl, 1 .json) and 1 subfolder (not searched); listed in ...']
    """
    if len(names) <= _IGNORED_LISTED:
        return [f"  ignored  {printable(name)} ({_why_left_out(name)})" for name in names]
    from .._words import ignored_summary

    return [f"  ignored  {printable(ignored_summary(names))}; listed in summary.json (ignored_files)"]


def _problems(table, names: dict[int, str]) -> list[str]:
    """One line per case with a problem: its status and what it is; with classes, each flag or error names the
    classes it holds for ("every class" when all have it; an error of the case itself, such as a file that could
    not be read, as it is). The cases whose prediction holds probabilities are one line, in the command line's terms
    (``--probabilities``), first."""
    from .. import schema

    lines = []
    maps = table[
        (table[schema.STATUS] == schema.FAILED) & table[schema.ERROR].astype(str).str.match(_PROBABILITIES.pattern)
    ].drop_duplicates(schema.CASE)
    if len(maps):
        lines.append(_probabilities_line(maps))
        table = table[~table[schema.CASE].isin(maps[schema.CASE])]
    for case, rows in table.groupby(schema.CASE, sort=False):
        bad = rows[rows[schema.STATUS] != schema.OK]
        if bad.empty:
            continue
        texts: dict[str, list[str]] = {}
        for row in bad.to_dict("records"):
            text = row[schema.ERROR] if row[schema.STATUS] == schema.FAILED else row[schema.FLAGS]
            c = int(row[schema.CLASS])
            texts.setdefault(printable(text), []).append(printable(names.get(c, str(c))))
        every_class = len(texts) == 1 and len(bad) == len(rows)
        failed = (bad[schema.STATUS] == schema.FAILED).any()
        if len(rows) == 1 or (every_class and failed):  # one class, or the case itself failed
            shown = "; ".join(texts)
        elif every_class:
            shown = f"{next(iter(texts))} (every class)"
        else:
            shown = "; ".join(
                f"{text} ({noun(len(classes), 'class')} {', '.join(classes)})" for text, classes in texts.items()
            )
        status = schema.FAILED if failed else bad[schema.STATUS].iloc[0]
        lines.append(f"  {status:<8}{printable(case)}: {shown}")  # an id or a message: on its one line
    return lines


def _probabilities_line(maps) -> str:
    """One line for the cases whose prediction is a probability map: the option that evaluates such maps."""
    from .. import schema

    row = maps.iloc[0]
    found = _PROBABILITIES.match(str(row[schema.ERROR]))
    value = found.group(1) if found else "a value between 0 and 1"
    folder = os.path.dirname(str(row.get(schema.PRED_FILE, "") or "")) or "PRED_DIR"
    ids = [printable(c) for c in maps[schema.CASE]]
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return (
        f"  error   {count(len(ids), 'case')} ({shown}): the predictions are probability maps, not masks "
        f"({ids[0]} holds {value}): give them as --probabilities {printable(folder)} instead of PRED_DIR (the "
        "segmentation is then prob > 0.5; --thresholds 0.1:0.9:0.1 evaluates other thresholds)"
    )


def _with_ci_text(table):
    """The table with its two interval columns shown as one ``95% CI`` text column."""
    from .. import schema

    table = table.copy()
    table["95% CI"] = [f"[{lo:.4g}, {hi:.4g}]" for lo, hi in zip(table[schema.CI_LOW], table[schema.CI_HIGH])]
    return table.drop(columns=[schema.CI_LOW, schema.CI_HIGH])


def _with_class_names(table, names: dict[int, str]):
    """The table with a ``class_name`` column after ``class`` when the classes have names."""
    from .. import schema

    if names:
        table = table.copy()
        table.insert(1, schema.CLASS_NAME, [printable(names.get(int(c), "")) for c in table[schema.CLASS]])
    return table


def _group_report(by: list[str], table) -> str:
    """The subgroup summaries as text (``--metadata``, ``--group-by``)."""
    import pandas as pd

    if table.empty:
        return "\nSummary by " + ", ".join(by) + ": no group"
    table = _with_ci_text(table)
    with pd.option_context("display.width", 200):
        text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    return f"\nSummary by {', '.join(by)} (each group's cases alone; n_cases: cases of the group):\n{text}"


def _size_report(result, edges) -> str:
    """The lesion-size table as text (``--size-bins``)."""

    table = result.size_table(edges)
    if table.empty:
        return "\nDetection by lesion size: no lesion table (no case evaluated)"
    return _bin_report(table, result.class_names, "lesion size", "size")


def _suv_report(result, edges) -> str:
    """The lesions' SUVmax table as text (``--suv-bins``)."""

    table = result.suv_table(edges)
    if table.empty:
        return "\nDetection by SUVmax: no SUVmax (evaluate with --metrics ...,pet and --images)"
    return _bin_report(table, result.class_names, "SUVmax", "SUVmax")


def _bin_report(table, names: dict[int, str], binned_by: str, own: str) -> str:
    """A per-bin detection table (``size_table``, ``suv_table``) as text, the classes named."""
    import pandas as pd

    shown = _with_class_names(table, names).drop(columns=["low", "high", "unit"])
    with pd.option_context("display.width", 200):
        text = shown.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    return f"\nDetection by {binned_by} (lesions of evaluated cases; false positives by their own {own}):\n{text}"


def _quantification_report(table, names: dict[int, str]) -> str:
    """The agreement of the model's PET measurements with the reference's (``summary.json``'s ``quantification``):
    per class, level and measure, the pairs, the bias with its interval, the limits of agreement, ICC(A,1) and Lin's
    CCC with their intervals, and the mean relative error, each from the table."""
    import math

    import pandas as pd

    def shown(v: float) -> str:  # a value that rounding alone keeps off 0 (1e-30) is shown as 0
        return f"{0.0 if abs(v) < 1e-12 else v:.4g}"

    def with_ci(row, name: str) -> str:
        v, low, high = row[name], row[f"{name}_ci_low"], row[f"{name}_ci_high"]
        if not math.isfinite(v):
            return "undefined"
        if math.isfinite(low) and math.isfinite(high):
            return f"{shown(v)} [{shown(low)}, {shown(high)}]"
        return shown(v)

    rows = []
    for _, r in table.iterrows():
        loa = f"[{shown(r['loa_low'])}, {shown(r['loa_high'])}]" if math.isfinite(r["loa_low"]) else "undefined"
        rel = r["relative_error_mean"]
        rows.append(
            {
                "class": r["class"],
                "level": r["level"],
                "measure": r["measure"],
                "n": int(r["n"]),
                "bias (pred - gt)": with_ci(r, "bias"),
                "limits of agreement": loa,
                "ICC(A,1)": with_ci(r, "icc"),
                "CCC": with_ci(r, "ccc"),
                "relative error": f"{rel:+.1%}" if math.isfinite(rel) else "undefined",
            }
        )
    frame = _with_class_names(pd.DataFrame(rows), names)
    with pd.option_context("display.width", 250, "display.max_colwidth", 40):
        text = frame.to_string(index=False)
    return (
        "\nPET quantification, model vs reference (patient: one pair per case; lesion: per detected lesion; "
        f"95% CIs over cases; scan values taken as SUV):\n{text}"
    )


def _curves_report(curves, names: dict[int, str]) -> str:
    """The detection curves ``evaluate --probabilities`` prints: AP, AUROC, the PI-CAI score and CPM with their
    intervals, and the FROC's sensitivities at the CPM's rates, each computed from the tables."""
    import math

    def value(v: float, ci) -> str:
        if not math.isfinite(v):
            return "undefined"
        if all(math.isfinite(x) for x in ci):
            return f"{v:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]"
        return f"{v:.4f}"

    lines = []
    for c, k in curves.items():
        label = f"class {c}" + (f" ({printable(names[c])})" if c in names else "") if len(curves) > 1 or names else ""
        negatives = k.n_cases - k.n_positive_cases
        lines += [
            "",
            f"Lesion detection{' of ' + label if label else ''}: {k.n_lesions} lesions in {k.n_positive_cases} "
            f"cases, {negatives} cases without; {k.n_true_positives} found, {k.n_false_positives} false-positive "
            "candidates (95% CI: case-level bootstrap)",
            f"  AP {value(k.ap, k.ap_ci)}   AUROC (cases) {value(k.auroc, k.auroc_ci)}",
            f"  PI-CAI score (AUROC + AP) / 2 {value(k.picai_score, k.picai_score_ci)}   CPM {value(k.cpm, k.cpm_ci)}",
            "  sensitivity at "
            + ", ".join(f"{r:g}: {k.sensitivity_at(r):.3f}" for r in (0.125, 0.25, 0.5, 1, 2, 4, 8))
            + " false positives per case",
        ]
        if not math.isfinite(k.auroc):
            lines.append("  (AUROC needs cases with and without lesions)")
    return "\n".join(lines)


def _threshold_report(means, best) -> str:
    """The means per threshold (``--thresholds``) and the best threshold by each standard and CC score."""
    import pandas as pd

    if not len(means):
        return "\nThresholds: no case with GT lesions was evaluated."
    with pd.option_context("display.width", 200):
        text = means.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    lines = ["", "Metrics of prob >= threshold, means over cases with GT lesions:", text]
    for key, picks in best.items():
        c, m = key.split("/", 1)
        if picks:
            shown = ", ".join(f"{'standard' if k == 'standard' else 'CC'} {m}: {t:g}" for k, t in picks.items())
            lines.append(f"  best threshold (class {c}) by {shown}")
    return "\n".join(lines)


def _calibration_report(calibration) -> str:
    """The maps' calibration (``--probabilities``): voxel-level Brier score and ECE, lesion-level ECE."""

    def value(entry) -> str:
        v, (lo, hi) = entry["value"], entry["ci"]
        if v is None:
            return "undefined"
        return f"{v:.4f}" + (f" [{lo:.4f}, {hi:.4f}]" if lo is not None and hi is not None else "")

    lines = []
    for c, e in calibration.items():
        where = f" (class {c})" if len(calibration) > 1 else ""
        lesion = "undefined (no candidates)" if e["lesion_ece"] is None else f"{e['lesion_ece']:.4f}"
        lines.append(
            f"Calibration{where}, {e['n_cases']} cases: voxel Brier {value(e['brier'])}, voxel ECE "
            f"{value(e['ece'])} (10 bins); candidate confidences' ECE {lesion}"
        )
    return "\n".join(lines)


def _why_left_out(name: str) -> str:
    """Why the pairing left one file or folder out, in words."""
    if name.endswith(os.sep):
        return "a subfolder: not searched"
    return "a hidden file" if os.path.basename(name).startswith(".") else "not an image file"
