"""docs/torch_api.md is the audit of torch's public names against the shim
as it is now (loom.shim.audit), and the shim's errors name what it lacks."""
import os
import re

import pytest
import torch

import loom.shim.torch as lt
from loom.shim import audit

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "torch_api.md")


def test_the_api_audit_is_current(capsys):
    with open(DOC) as f:
        recorded = re.search(r"against torch (\S+) ", f.read()).group(1)
    if recorded != torch.__version__:
        pytest.skip(f"docs/torch_api.md audits torch {recorded}; this torch is {torch.__version__}")
    assert audit.main(["--check", DOC]) == 0, capsys.readouterr().out


def test_every_listed_name_resolves_as_classified():
    result = audit.audit()
    assert set(result) == {m for m, _ in audit.MODULES}
    for module, rows in result.items():
        assert not set(rows["implemented"]) & set(rows["missing"]), module
    assert "index_put_" in result["torch.Tensor"]["implemented"]
    assert "Embedding" in result["torch.nn"]["implemented"]


def test_a_missing_name_and_one_left_out_on_purpose_raise_naming_it():
    with pytest.raises(NotImplementedError, match=r"^torch\.fft is not supported by loom$"):
        lt.fft
    with pytest.raises(NotImplementedError, match=r"torch\.sparse_coo_tensor is not supported by loom: .*sparse"):
        lt.sparse_coo_tensor
    with pytest.raises(NotImplementedError, match=r"torch\.Tensor\.to_sparse is not supported by loom: .*sparse"):
        lt.zeros(2).to_sparse
    assert not hasattr(lt, "view_as_complex")
