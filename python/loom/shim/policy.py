"""The torch names the shim leaves out on purpose, one row per family:
(module, how the name matches, pattern, why). A name that matches raises
NotImplementedError with the reason; any other name the shim lacks is simply
missing (see audit.py, which sorts torch's public names into implemented,
unsupported on purpose and missing)."""

_SPARSE = "loom's tensors are dense and strided: no sparse layouts"
_QUANT = "loom has no quantized dtypes"
_COMPLEX = "loom has no complex dtypes"
_BACKEND = "a kernel of one backend library (cuDNN, MIOpen, oneDNN, FBGEMM, ...): loom generates its own kernels"
_SCRIPT = "TorchScript and ONNX export: loom captures with loom.jit / torch.compile instead"
_NAMED = "named tensors (a prototype in torch) are not supported"
_NESTED = "nested and masked tensors are not supported"

# (module, "prefix" | "contains" | "name", pattern, reason)
RULES = [
    ("*", "contains", "sparse", _SPARSE),
    ("*", "prefix", "to_sparse", _SPARSE),
    ("*", "contains", "quantize", _QUANT),
    ("*", "prefix", "q_", _QUANT),
    ("*", "prefix", "qint", _QUANT),
    ("*", "prefix", "quint", _QUANT),
    ("*", "prefix", "int_repr", _QUANT),
    ("*", "prefix", "Quantized", _QUANT),
    ("*", "prefix", "qscheme", _QUANT),
    ("*", "prefix", "per_tensor", _QUANT),
    ("*", "prefix", "per_channel", _QUANT),
    ("*", "contains", "complex", _COMPLEX),
    ("*", "name", "cfloat", _COMPLEX),
    ("*", "name", "cdouble", _COMPLEX),
    ("*", "name", "chalf", _COMPLEX),
    ("*", "name", "view_as_real", _COMPLEX),
    ("*", "name", "polar", _COMPLEX),
    ("*", "prefix", "cudnn", _BACKEND),
    ("*", "prefix", "miopen", _BACKEND),
    ("*", "prefix", "mkldnn", _BACKEND),
    ("*", "prefix", "fbgemm", _BACKEND),
    ("*", "prefix", "mps", _BACKEND),
    ("*", "prefix", "vulkan", _BACKEND),
    ("*", "prefix", "xpu", _BACKEND),
    ("*", "prefix", "hip", _BACKEND),
    ("*", "prefix", "ipu", _BACKEND),
    ("*", "prefix", "is_vulkan", _BACKEND),
    ("*", "prefix", "is_mkldnn", _BACKEND),
    ("*", "prefix", "is_xpu", _BACKEND),
    ("*", "prefix", "is_ipu", _BACKEND),
    ("*", "prefix", "is_mps", _BACKEND),
    ("torch", "name", "jit", _SCRIPT),
    ("torch", "name", "onnx", _SCRIPT),
    ("torch.onnx", "prefix", "", _SCRIPT),
    ("torch", "prefix", "Script", _SCRIPT),
    ("torch", "name", "ScriptFunction", _SCRIPT),
    ("torch", "name", "ScriptModule", _SCRIPT),
    ("torch", "name", "import_ir_module", _SCRIPT),
    ("torch", "name", "import_ir_module_from_buffer", _SCRIPT),
    ("torch", "name", "merge_type_from_type_comment", _SCRIPT),
    ("torch", "name", "parse_ir", _SCRIPT),
    ("torch", "name", "parse_schema", _SCRIPT),
    ("torch", "name", "parse_type_comment", _SCRIPT),
    ("torch", "name", "unify_type_list", _SCRIPT),
    ("*", "prefix", "refine_names", _NAMED),
    ("*", "name", "rename", _NAMED),
    ("*", "name", "rename_", _NAMED),
    ("*", "name", "align_to", _NAMED),
    ("*", "name", "align_as", _NAMED),
    ("*", "name", "align_tensors", _NAMED),
    ("*", "name", "names", _NAMED),
    ("*", "name", "has_names", _NAMED),
    ("*", "contains", "nested", _NESTED),
    ("*", "name", "is_nested", _NESTED),
]


def reason(module, name):
    """Why the shim leaves torch's `module.name` out on purpose, or None."""
    for mod, how, pattern, why in RULES:
        if mod not in ("*", module):
            continue
        low = name.lower()
        if (how == "name" and name == pattern) or (how == "prefix" and low.startswith(pattern.lower())) or \
                (how == "contains" and pattern in low):
            return why
    return None
