"""Results of order 3 and 4 (scipy.sparse holds matrices only): coordinates and values in numpy
arrays, made from the per-level arrays the library filled (sj_pending_fill_levels)."""
import numpy as np

# sj_level_kind
_DENSE, _COMPRESSED, _SINGLETON, _COMPRESSED_NONUNIQUE = 0, 1, 2, 3


class CooTensor:
    """A sparse tensor of order 3 or 4: `coords` (nnz x order, int64, column m = mode m),
    `values` (nnz) and `shape`, in the library's storage order (sorted by its level order).
    numpy owns the memory."""

    def __init__(self, coords, values, shape):
        self.coords = coords
        self.values = values
        self.shape = tuple(int(d) for d in shape)

    @property
    def nnz(self):
        return self.values.size

    @property
    def ndim(self):
        return len(self.shape)

    def todense(self):
        """A dense numpy array of the shape (stored coordinates are unique)."""
        out = np.zeros(self.shape, dtype=self.values.dtype)
        if self.nnz:
            out[tuple(self.coords.T)] = self.values
        return out

    @classmethod
    def from_levels(cls, dims, mode_order, kinds, pos, crd, values):
        """Walks the levels: each stored leaf gets the coordinate of every level above it."""
        order = len(kinds)
        parents = 1
        level_coords = []  # per level: the coordinate of each entry of the current level
        for lv in range(order):
            n = int(dims[mode_order[lv]])
            if kinds[lv] == _DENSE:
                parent = np.repeat(np.arange(parents, dtype=np.int64), n)
                coord = np.tile(np.arange(n, dtype=np.int64), parents)
            elif kinds[lv] in (_COMPRESSED, _COMPRESSED_NONUNIQUE):
                p = pos[lv]
                parent = np.repeat(np.arange(parents, dtype=np.int64), np.diff(p))
                coord = crd[lv].astype(np.int64, copy=False)
            elif kinds[lv] == _SINGLETON:
                parent = np.arange(parents, dtype=np.int64)
                coord = crd[lv].astype(np.int64, copy=False)
            else:
                raise ValueError(f"unknown level kind {kinds[lv]}")
            level_coords = [c[parent] for c in level_coords] + [coord]
            parents = coord.size
        coords = np.empty((parents, order), dtype=np.int64)
        for lv in range(order):
            coords[:, mode_order[lv]] = level_coords[lv]
        return cls(coords, values, [dims[m] for m in range(order)])

    def __repr__(self):
        return f"CooTensor(shape={self.shape}, nnz={self.nnz}, dtype={self.values.dtype})"
