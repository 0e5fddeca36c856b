"""torch.nn.Module and the containers (Sequential, ModuleList, ModuleDict).

A module keeps its parameters, buffers and submodules in three ordered dicts,
filled by attribute assignment, and walks them for parameters(), state_dict(),
to(), train() and the rest, in registration order as torch does."""
import collections
import itertools

from loom import Tensor, dtype, no_grad
from loom.devices import is_device, resolve
from loom.shim import unsupported
from .parameter import Parameter

_dt = dtype
_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class RemovableHandle:
    """What register_*_hook returns: remove() unregisters the hook."""
    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Module:
    training = True

    def __init__(self, *args, **kwargs):
        for name in ("_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks"):
            object.__setattr__(self, name, collections.OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "training", True)

    # ---- attribute routing
    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            self._modules[name] = value
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for d in ("_parameters", "_buffers", "_modules"):
            self.__dict__[d].pop(name, None)

    def __getattr__(self, name):
        for d in ("_parameters", "_buffers", "_modules"):
            table = self.__dict__.get(d)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for d in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(d, ()):
                del self.__dict__[d][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # ---- registration
    @staticmethod
    def _check_name(name, what):
        """torch's checks of a registered name."""
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{what} name can\'t contain "."' + (f", got: {name}" if what == "module" else ""))
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')

    def register_parameter(self, name, param):
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._forget(name)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        self._check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        mod = self
        for part in target.split(".") if target else ():
            mod = getattr(mod, part)
        return mod

    # ---- calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        out = self.forward(*args, **kwargs)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                res = hook(self, args, out)
                if res is not None:
                    out = res
        return out

    def register_forward_hook(self, hook):
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook):
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    # ---- traversal
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        memo = set() if memo is None else memo
        if self in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, mod in self._modules.items():
            if mod is not None:
                yield from mod.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, mod in self._modules.items():
            if mod is not None and mod not in seen:
                seen.add(mod)
                yield name, mod

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, v in getattr(mod, table).items():
                if v is None or id(v) in seen:
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + name, v

    def named_parameters(self, prefix="", recurse=True):
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- state
    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name; the values share storage with the module's."""
        out = collections.OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, mod in self._modules.items():
            if mod is not None:
                mod.state_dict(destination=out, prefix=prefix + name + ".", keep_vars=keep_vars)
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies values into the existing parameters and buffers (torch's copy_ under no_grad)."""
        missing, errors, expected = [], [], set()
        with no_grad():
            for mod_prefix, mod in self.named_modules():
                mod_prefix = mod_prefix + "." if mod_prefix else ""
                local = [(n, p) for n, p in mod._parameters.items() if p is not None]
                local += [(n, b) for n, b in mod._buffers.items()
                          if b is not None and n not in mod._non_persistent_buffers_set]
                for name, target in local:
                    key = mod_prefix + name
                    expected.add(key)
                    if key not in state_dict:
                        missing.append(key)
                        continue
                    value = state_dict[key]
                    if not isinstance(value, Tensor):
                        errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                      f'Tensor-like object from checkpoint but received {type(value)}')
                    elif tuple(value.shape) != tuple(target.shape):
                        errors.append(f"size mismatch for {key}: copying a param with shape "
                                      f"torch.Size({list(value.shape)}) from checkpoint, the shape in current "
                                      f"model is torch.Size({list(target.shape)}).")
                    else:
                        target.copy_(value)
        unexpected = [k for k in state_dict if k not in expected]
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected)
                              + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # ---- modes and gradients
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=False):
        """set_to_none defaults to False, as in torch 1.13 (the version the shim presents)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach().zero_()

    # ---- dtype and device: parameters keep their identity; their data is replaced
    def _apply_tensors(self, fn):
        with no_grad():
            for m in self.modules():
                for table in (m._parameters, m._buffers):
                    for name, t in table.items():
                        if t is None:
                            continue
                        new = fn(t)
                        if new is not t:
                            t.data = new
                            if t.grad is not None:
                                t.grad = fn(t.grad)
        return self

    def to(self, *args, **kwargs):
        dtype, dev = kwargs.pop("dtype", None), kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, _dt):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif is_device(a):
                dev = a
        resolve(dev)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        if fmt is None:
            return self if dtype is None else self._cast_floats(dtype)

        def convert(t):
            cast = dtype if dtype is not None and t.dtype.is_floating_point else None
            if t.ndim in (4, 5):  # as torch: only 4-d and 5-d tensors change layout
                return t.to(dtype=cast, memory_format=fmt)
            return t.to(cast) if cast is not None else t
        return self._apply_tensors(convert)

    def _cast_floats(self, dtype):
        return self._apply_tensors(lambda t: t.to(dtype) if t.dtype.is_floating_point else t)

    def float(self):
        return self._cast_floats(_dt.float32)

    def double(self):
        return self._cast_floats(_dt.float64)

    def half(self):
        return self._cast_floats(_dt.float16)

    def bfloat16(self):
        return self._cast_floats(_dt.bfloat16)

    def type(self, dst_type):
        return self._cast_floats(dst_type)

    def cuda(self, device=None):
        resolve("cuda" if device is None else device)
        return self

    def cpu(self):
        return self

    # ---- printing
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, mod in self._modules.items():
            body = repr(mod).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        if not self._modules:
            return f"{self._get_name()}({self.extra_repr()})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class Sequential(Module):
    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for name, mod in args[0].items():
                self.add_module(name, mod)
        else:
            for i, mod in enumerate(args):
                self.add_module(str(i), mod)

    def forward(self, input):
        for mod in self._modules.values():
            input = mod(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(collections.OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[idx]

    def __setitem__(self, idx, module):
        key = list(self._modules)[idx]
        self.add_module(key, module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return list(self._modules.values())[idx]

    def __setitem__(self, idx, module):
        self.add_module(list(self._modules)[idx], module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module


__getattr__ = unsupported(__name__)
