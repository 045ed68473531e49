# SPDX-License-Identifier: Apache-2.0
# Labels and indices exactly, on index-pattern data, under this interpreter's NumPy (Debian's:
# NumPy 1); numpy2_test.sh runs the same checks under NumPy 2 (labels_exact.py says why).
import labels_exact


def test_labels_and_indices_numpy(stoker_cli):
    labels_exact.check_all(stoker_cli, ["numpy"])


def test_labels_torch(stoker_cli):
    labels_exact.check_all(stoker_cli, ["torch"])


def test_import_checks_int64_export():
    import numpy
    import stoker
    probe = numpy.asarray(stoker._stoker.int64s_probe(stoker._PROBE))
    assert probe.tolist() == stoker._PROBE and probe.strides == (8,)


def test_import_refuses_a_wrong_int64_export(monkeypatch):
    """What issue 47's module made under NumPy 2 (stride 0: every value the last) is refused."""
    import numpy
    import pytest
    import stoker

    def stride_zero(values):
        last = numpy.array(values[-1:], dtype=numpy.int64)
        return numpy.lib.stride_tricks.as_strided(last, shape=(len(values),), strides=(0,))
    monkeypatch.setattr(stoker._stoker, "int64s_probe", stride_zero)
    with pytest.raises(ImportError, match=r"strides \(0,\).*pybind11 2\.\d+\.\d+"):
        stoker._check_int_export()
