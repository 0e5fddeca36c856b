"""torch.optim.Optimizer: param_groups (dicts with the defaults filled in),
per-parameter state, zero_grad, state_dict. Subclasses write step()."""
import collections
import weakref

from loom import Tensor, enable_grad, realize_all
from loom.shim import unsupported


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()

_live = weakref.WeakSet()  # every optimizer, for torch.compile's guard on hyperparameters


def hyperparameters():
    """The numbers in each live optimizer's param groups (lr, momentum, ...), by
    id: what a captured step reads as constants."""
    return {id(o): tuple(tuple(sorted((k, v) for k, v in g.items() if isinstance(v, (bool, int, float))))
                         for g in o.param_groups) for o in list(_live)}


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = collections.defaultdict(dict)
        self.param_groups = []
        _live.add(self)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            "got " + type(params).__name__)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=False):
        """set_to_none defaults to False, as in torch 1.13 (the version the shim presents)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else p.grad.detach().zero_()

    def step(self, closure=None):
        raise NotImplementedError

    def _with_grads(self, group):
        """(param, gradient, state) for each param of the group that has a
        gradient; the gradient negated where the group maximizes."""
        for p in group["params"]:
            if p.grad is not None:
                yield p, (-p.grad if group.get("maximize") else p.grad), self.state[p]

    @staticmethod
    def _loss_of(closure):
        """The closure's loss, computed with grad enabled, as torch's step(closure) does; None without one."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _finish_step(self):
        """Realizes every updated parameter and state tensor together, so the next step starts from buffers."""
        tensors = [p for g in self.param_groups for p in g["params"]]
        for st in self.state.values():
            tensors += [v for v in st.values() if isinstance(v, Tensor)]
        realize_all(tensors)

    def state_dict(self):
        index, groups = {}, []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(v) for p, v in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        by_index = {}
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
            by_index.update(zip(saved["params"], mine["params"]))
            mine.update({k: v for k, v in saved.items() if k != "params"})
        self.state = collections.defaultdict(dict)
        for i, st in state_dict["state"].items():
            self.state[by_index[i]] = {k: (v.detach().clone() if isinstance(v, Tensor) else v) for k, v in st.items()}

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


__getattr__ = unsupported(__name__)
