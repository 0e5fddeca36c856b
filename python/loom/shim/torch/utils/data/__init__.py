"""torch.utils.data: Dataset, TensorDataset, Subset, samplers, DataLoader and
default_collate. Loading runs in this process (num_workers is accepted); a
TensorDataset batch is one gather per tensor, not a stack of single rows."""
import collections
import math
import numbers

import numpy as np

from loom import Tensor, float64, from_numpy, randperm as _randperm, stack, tensor
from loom.shim import unsupported
from ..._random import with_generator

randperm = with_generator(_randperm)


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    def __init__(self, *tensors):
        if any(tensors[0].shape[0] != t.shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1]) if self.cumulative_sizes else 0

    def __getitem__(self, idx):
        if idx < 0:
            idx += len(self)
        d = int(np.searchsorted(self.cumulative_sizes, idx, side="right"))
        return self.datasets[d][idx - (int(self.cumulative_sizes[d - 1]) if d else 0)]


def random_split(dataset, lengths, generator=None):
    n = len(dataset)
    if all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1):
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out


class Sampler:
    def __init__(self, data_source=None):
        pass


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A permutation from loom's generator (seeded by torch.manual_seed), one per epoch."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if replacement:
            raise NotImplementedError("torch.utils.data.RandomSampler(replacement=True) is not supported by loom")
        self.data_source, self.generator = data_source, generator
        self.num_samples = len(data_source) if num_samples is None else num_samples

    def __iter__(self):
        return iter(randperm(len(self.data_source), generator=self.generator).tolist()[:self.num_samples])

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


def default_collate(batch):
    """Stacks tensors, arrays and numbers; recurses into tuples, lists and dicts as torch's does."""
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch), 0)
    if isinstance(first, np.ndarray):
        return from_numpy(np.stack(batch))
    if isinstance(first, np.generic):
        return from_numpy(np.array(batch))
    if isinstance(first, bool):
        return tensor(list(batch))
    if isinstance(first, numbers.Integral):
        return tensor(list(batch))
    if isinstance(first, float):
        return tensor(list(batch), dtype=float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        return {k: default_collate([d[k] for d in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(first)}")


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device=""):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
        self.dataset, self.num_workers = dataset, num_workers
        self.batch_size = None if batch_sampler is not None else batch_size
        self.drop_last = drop_last
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self._default_collate = collate_fn is None
        self.collate_fn = default_collate if collate_fn is None else collate_fn

    def _fetch(self, indices):
        if self._default_collate and isinstance(self.dataset, TensorDataset):
            index = tensor(indices)
            return [t[index] for t in self.dataset.tensors]
        return self.collate_fn([self.dataset[i] for i in indices])

    def __iter__(self):
        if self.batch_sampler is None:
            for i in self.sampler:
                yield self.dataset[i]
            return
        for indices in self.batch_sampler:
            yield self._fetch(list(indices))

    def __len__(self):
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)


__getattr__ = unsupported(__name__)
