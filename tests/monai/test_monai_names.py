"""One name per idea in ccmetrics.monai (issue 40): ``aggregation="cc_patient" | "cc_pooled"``, the tables' names,
where ``mode="patient" | "overall"`` was; the former keyword and values still read for a release, with a
DeprecationWarning naming the new form, and the same values. MONAI's own ``y_pred, y`` stay, without a warning."""

import re
import warnings
from contextlib import contextmanager

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("monai")

from ccmetrics.monai import CCDiceMetric, CCMetric  # noqa: E402
from ccmetrics.monai.metric import as_aggregation  # noqa: E402

GT = torch.zeros(2, 1, 10, 10, dtype=torch.bool)
GT[:, :, 1:4, 1:4] = True
GT[0, :, 6:9, 6:9] = True
PRED = GT.clone()
PRED[0, :, 6:9, 6:9] = False


def one_hot(m):
    return torch.cat([~m, m], dim=1)


@contextmanager
def no_deprecation():
    """No deprecation warning of this project's arguments inside (other libraries' warnings pass)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    ours = [str(w.message) for w in caught if re.search(r"is deprecated: use", str(w.message))]
    assert not ours, ours


def _filled(metric):
    with no_deprecation():
        metric(y_pred=one_hot(PRED), y=one_hot(GT))  # MONAI's keywords: no warning
        metric(one_hot(PRED), one_hot(GT))  # MONAI's order by position: no warning
    return metric


def test_ccmetric_aggregation_names_and_their_former_mode():
    with no_deprecation():
        pooled = _filled(CCMetric("dice", aggregation="cc_pooled"))
        patient = _filled(CCMetric("dice"))
        assert pooled.aggregation == "cc_pooled" and patient.aggregation == "cc_patient"
        values = {a: _filled(CCMetric("dice")).aggregate(aggregation=a).item() for a in ("cc_patient", "cc_pooled")}
    assert values == {"cc_patient": pytest.approx(0.75), "cc_pooled": pytest.approx(4 / 6)}
    assert pooled.aggregate().item() == values["cc_pooled"] and patient.aggregate().item() == values["cc_patient"]
    with pytest.warns(DeprecationWarning) as caught:
        former = _filled(CCMetric("dice", mode="overall"))
    assert [str(w.message) for w in caught if "is deprecated: use" in str(w.message)] == [
        "CCMetric(mode=...) is deprecated: use CCMetric(aggregation=...)",
        "CCMetric(mode='overall') is deprecated: use CCMetric(aggregation='cc_pooled')",
    ]
    assert former.aggregation == "cc_pooled" and former.mode == "overall"
    assert former.aggregate().item() == values["cc_pooled"]
    with pytest.warns(DeprecationWarning, match=r"aggregate\(mode=\.\.\.\) is deprecated: use CCMetric.aggregate\("):
        assert patient.aggregate(mode="overall").item() == values["cc_pooled"]
    with pytest.warns(DeprecationWarning, match="use CCMetric.aggregate\\(aggregation='cc_patient'\\)"):
        assert pooled.aggregate("patient").item() == values["cc_patient"]
    with pytest.raises(ValueError, match="aggregation must be one of"):
        CCMetric("dice", aggregation="per_lesion")
    with pytest.warns(DeprecationWarning, match="use CCMetric.aggregation"):
        patient.mode = "overall"
    assert patient.aggregation == "cc_pooled" and patient.aggregate().item() == values["cc_pooled"]


def test_handlers_take_aggregation():
    pytest.importorskip("ignite")
    from ccmetrics.monai import CCDiceHandler, CCSurfaceDiceHandler

    with no_deprecation():
        assert CCDiceHandler(aggregation="cc_pooled").metric_fn.aggregation == "cc_pooled"
        assert CCDiceHandler(False, "mean", "cc_pooled").metric_fn.aggregation == "cc_pooled"  # its former position
    with pytest.warns(DeprecationWarning, match=r"CCSurfaceDiceHandler\(mode=\.\.\.\) is deprecated"):
        assert CCSurfaceDiceHandler(mode="overall").metric_fn.aggregation == "cc_pooled"


def test_published_interface_keeps_cc_reduction_and_reads_the_tables_names():
    with no_deprecation():
        published = CCDiceMetric(cc_reduction="overall")
        named = CCDiceMetric(aggregation="cc_pooled")
        for metric in (published, named):
            metric(y_pred=one_hot(PRED), y=one_hot(GT))
        assert np.array_equal(published.cc_aggregate().numpy(), named.cc_aggregate().numpy())
        assert np.array_equal(
            published.cc_aggregate(mode="patient").numpy(), named.cc_aggregate(mode="cc_patient").numpy()
        )
    with pytest.raises(ValueError, match="not both"):
        CCDiceMetric(cc_reduction="overall", aggregation="cc_pooled")


def test_as_aggregation():
    assert as_aggregation("cc_patient") == "cc_patient" and as_aggregation("patient") == "cc_patient"
    with pytest.raises(ValueError, match="former mode values"):
        as_aggregation("mean")
