"""The formats are the bottom layer (issue 40): the classes, the dataset.json reader and the memory-limit error moved
down, nnU-Net's summary writer moved up to the results; the former paths give the same objects (with a
``DeprecationWarning`` that names the new path where the name left its layer)."""

import pickle
import warnings

import pytest


def test_the_classes_are_read_from_the_metrics_too_without_a_warning():
    import ccmetrics.formats.classes as classes
    import ccmetrics.formats.nnunet as nnunet

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import ccmetrics.metrics.classes as former

        for name in ("ClassSpec", "parse_classes", "remove_ignored", "class_values"):
            assert getattr(former, name) is getattr(classes, name)
        assert former.read_dataset_json is nnunet.read_dataset_json and former.DatasetJson is nnunet.DatasetJson
    assert former.parse_classes("wt=1+2,et=2") == classes.parse_classes("wt=1+2,et=2")


def test_the_summary_writer_of_the_former_formats_path_warns_and_is_the_results_one():
    import ccmetrics.formats as formats
    import ccmetrics.formats.nnunet as nnunet
    from ccmetrics.results.nnunet import nnunet_summary

    with pytest.warns(DeprecationWarning, match=r"ccmetrics\.results\.nnunet\.nnunet_summary") as caught:
        former = nnunet.nnunet_summary
    assert former is nnunet_summary and caught[0].filename == __file__
    with pytest.warns(DeprecationWarning, match=r"ccmetrics\.results\.nnunet\.nnunet_summary") as caught:
        from ccmetrics.formats.nnunet import nnunet_summary as imported
    assert imported is nnunet_summary and caught[0].filename == __file__
    with pytest.warns(DeprecationWarning, match=r"ccmetrics\.formats\.nnunet_summary is deprecated"):
        assert formats.nnunet_summary is nnunet_summary
    assert "nnunet_summary" not in formats.__all__ and "nnunet_summary" not in nnunet.__all__
    with pytest.raises(AttributeError):
        nnunet.not_a_name  # noqa: B018


def test_the_formats_package_gives_the_classes_and_the_dataset_json_reader():
    import ccmetrics.formats as formats
    from ccmetrics.formats.classes import ClassSpec
    from ccmetrics.formats.nnunet import read_dataset_json

    assert formats.ClassSpec is ClassSpec and formats.read_dataset_json is read_dataset_json
    assert {"ClassSpec", "parse_classes", "read_dataset_json", "DatasetJson"} <= set(formats.__all__)


def test_the_memory_limit_error_is_one_class_whatever_its_path():
    import ccmetrics._memory as foundation
    import ccmetrics.engine as engine
    import ccmetrics.engine._budget as budget
    import ccmetrics.engine.memory as memory
    from ccmetrics.formats.probabilities import ProbabilityMemoryError

    error = foundation.MemoryLimitError
    assert memory.MemoryLimitError is budget.MemoryLimitError is engine.MemoryLimitError is error
    assert memory.over_limit is foundation.over_limit and memory.format_bytes is foundation.format_bytes
    assert issubclass(ProbabilityMemoryError, memory.MemoryLimitError)
    with pytest.raises(memory.MemoryLimitError):
        raise budget.MemoryLimitError("caught by the public name")
    again = pickle.loads(pickle.dumps(error("needs about 3.0 GiB")))
    assert type(again) is error and str(again) == "needs about 3.0 GiB"
    # a pickle of the former class path (a record written before the move) still loads
    former = pickle.dumps(error("x"), protocol=0).replace(b"ccmetrics._memory", b"ccmetrics.engine._budget")
    assert b"ccmetrics.engine._budget" in former
    assert type(pickle.loads(former)) is error
