"""The ops of issue 14 against PyTorch: results (values, dtypes, shapes) and errors of the
calls small-network programs make, including 0-d and empty tensors where PyTorch takes
them; the CUDA path (the stand-in) for a representative subset; gradients the op table
(tests/test_ops_table.py) cannot check against PyTorch.

Each case is written once over a module ``m``, ``gradcore`` or ``torch``, whose names
agree."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch, pinned_torch_only

NAN, INF = float("nan"), float("inf")
TIES = [3.0, 1.0, 2.0, 3.0, 1.0, NAN, 2.0]


def _f64(m, data):
    return m.tensor(data, dtype=m.float64)


CASES = {
    # sorting (always stable: ties keep their order, NaN is the largest)
    "sort": lambda m: m.sort(m.tensor(TIES)),
    "sort_descending": lambda m: m.sort(m.tensor(TIES), descending=True, stable=True),
    "sort_dim0_positional": lambda m: m.tensor([[3, 1], [2, 0], [2, 5]]).sort(0, True),
    "sort_bool": lambda m: m.sort(m.tensor([True, False, True, False])),
    "sort_int32_2d": lambda m: m.sort(m.tensor([[5, -1, 2], [0, 0, -3]], dtype=m.int32)),
    "sort_0d": lambda m: m.sort(m.tensor(3.0)),
    "sort_empty": lambda m: m.sort(m.zeros(0, 3), 1),
    "argsort": lambda m: m.argsort(m.tensor(TIES), stable=True),
    "argsort_descending": lambda m: m.tensor([[2, 1, 2], [1, 2, 1]]).argsort(1, True),
    "argsort_0d": lambda m: m.argsort(m.tensor(1.5)),
    "msort": lambda m: m.msort(m.tensor([[3, 1], [2, 0], [4, -1]])),
    "topk": lambda m: m.topk(m.tensor([[1.0, 5.0, 3.0, 4.0], [0.5, -1.0, 2.0, 7.0]]), 2),
    "topk_smallest_dim0": lambda m: m.tensor([[1, 5], [3, 4], [0, 9]]).topk(2, 0, False),
    "topk_nan": lambda m: m.topk(m.tensor([3.0, NAN, 1.0]), 2),
    "topk_k0": lambda m: m.topk(m.tensor([3.0, 1.0]), 0),
    "topk_0d": lambda m: m.topk(m.tensor(3.0), 1),
    "topk_empty_rows": lambda m: m.topk(m.zeros(0, 3), 2),
    "kthvalue": lambda m: m.kthvalue(m.tensor([3.0, 1.0, 2.0]), 2),
    "kthvalue_keepdim": lambda m: m.kthvalue(m.tensor([[3, 1, 2], [0, 5, 4]]), 2, 0, True),
    "kthvalue_0d": lambda m: m.kthvalue(m.tensor(3.0), 1),
    "kthvalue_empty_rows": lambda m: m.kthvalue(m.zeros(3, 0), 2, 0),
    # reductions and statistics
    "aminmax": lambda m: m.aminmax(m.tensor([[1.0, 2.0, 4.0], [0.5, 9.0, 3.0]])),
    "aminmax_dim_keepdim": lambda m: m.aminmax(m.tensor([[1, 2, 4], [5, 9, 3]]), dim=-1,
                                               keepdim=True),
    "aminmax_keepdim_all": lambda m: m.tensor([[1.0, 2.0]]).aminmax(keepdim=True),
    "aminmax_bool": lambda m: m.aminmax(m.tensor([True, False])),
    "aminmax_0d": lambda m: m.aminmax(m.tensor(1.5)),
    "aminmax_empty_rows": lambda m: m.aminmax(m.zeros(0, 3), dim=1),
    "count_nonzero": lambda m: m.count_nonzero(m.tensor([[1.0, 0.0, 4.0], [0.0, 0.0, 2.0]])),
    "count_nonzero_dim": lambda m: m.tensor([[1, 0, 4], [0, 0, 2]]).count_nonzero(1),
    "count_nonzero_dims": lambda m: m.count_nonzero(m.ones(2, 3, 4), dim=(0, 2)),
    "count_nonzero_empty_list": lambda m: m.count_nonzero(m.tensor([[1.0, 0.0]]), dim=[]),
    "count_nonzero_0d": lambda m: m.count_nonzero(m.tensor(2.0)),
    "var_mean": lambda m: m.var_mean(m.tensor([[1.0, 2.0, 4.0], [3.0, 3.0, 0.0]])),
    "var_mean_dim_unbiased": lambda m: m.var_mean(m.tensor([[1.0, 2.0, 4.0]]), 1, False, True),
    "var_mean_correction": lambda m: m.var_mean(m.tensor([[1.0, 2.0, 4.0]]), dim=1,
                                                correction=0),
    "var_mean_positional_unbiased": lambda m: m.var_mean(m.tensor([1.0, 2.0, 4.0]), False),
    "std_mean_keepdim": lambda m: m.std_mean(m.tensor([[1.0, 2.0, 4.0]]), keepdim=True),
    "std_mean_dims": lambda m: m.std_mean(_f64(m, np.arange(24.0).reshape(2, 3, 4)), (0, 2)),
    # counting
    "unique": lambda m: m.unique(m.tensor([3, 1, 2, 3, 1, 5])),
    "unique_sorted_false": lambda m: m.unique(m.tensor([3, 1, 2, 3]), sorted=False),
    "unique_inverse_counts": lambda m: m.unique(m.tensor([[3, 1], [2, 3]]), return_inverse=True,
                                                return_counts=True),
    "unique_counts_method": lambda m: m.tensor([2.0, 2.0, -1.0]).unique(return_counts=True),
    "unique_dim": lambda m: m.unique(m.tensor([[3, 1], [2, 3], [3, 1]]), return_inverse=True,
                                     return_counts=True, dim=0),
    "unique_0d": lambda m: m.unique(m.tensor(3), return_inverse=True, return_counts=True),
    "unique_empty": lambda m: m.unique(m.zeros(0), return_inverse=True, return_counts=True),
    "unique_nan": lambda m: m.unique(m.tensor([1.0, NAN, NAN, 0.5])),
    "unique_bool": lambda m: m.unique(m.tensor([True, False, True]), return_counts=True),
    "bincount": lambda m: m.bincount(m.tensor([0, 1, 1, 3])),
    "bincount_minlength": lambda m: m.tensor([0, 1, 1, 3]).bincount(minlength=6),
    "bincount_int32": lambda m: m.bincount(m.tensor([2, 2, 0], dtype=m.int32)),
    "bincount_weights_f32": lambda m: m.bincount(m.tensor([0, 1, 1, 3]),
                                                 m.tensor([0.5, 0.5, 1.0, 2.0])),
    "bincount_weights_f64": lambda m: m.bincount(m.tensor([0, 1, 1, 3]),
                                                 weights=_f64(m, [0.5, 0.5, 1.0, 2.0])),
    "bincount_weights_int": lambda m: m.bincount(m.tensor([0, 1, 1]), m.tensor([1, 2, 3])),
    "bincount_empty": lambda m: m.bincount(m.zeros(0, dtype=m.int64)),
    "bincount_empty_minlength": lambda m: m.bincount(m.zeros(0, dtype=m.int64), minlength=2),
    "histc": lambda m: m.histc(m.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3),
    "histc_own_range": lambda m: m.histc(m.tensor([1.0, 2.0, 1.0, 5.0]), bins=4),
    "histc_one_value": lambda m: m.tensor([1.0, 1.0]).histc(bins=4),
    "histc_edges": lambda m: m.histc(m.tensor([0.0, 1.0, 2.0, 3.0, 3.5, -0.5]), 3, 0, 3),
    "histc_float64_nan": lambda m: m.histc(_f64(m, [1.0, NAN, 2.5]), bins=3, min=0, max=3),
    "histc_many": lambda m: m.histc(_f64(m, np.linspace(-1.0, 2.0, 1001)), bins=7, min=-0.5,
                                    max=1.5),
    "histc_empty": lambda m: m.histc(m.zeros(0), bins=2),
    "searchsorted": lambda m: m.searchsorted(m.tensor([1.0, 3.0, 5.0, 7.0]),
                                             m.tensor([3.0, 6.0, 9.0, 0.0])),
    "searchsorted_right": lambda m: m.searchsorted(m.tensor([1.0, 3.0, 5.0, 7.0]),
                                                   m.tensor([3.0, 6.0]), right=True),
    "searchsorted_side": lambda m: m.searchsorted(m.tensor([1, 3, 3, 7]), m.tensor([3, 6]),
                                                  side="right"),
    "searchsorted_scalar": lambda m: m.searchsorted(m.tensor([1.0, 3.0, 5.0]), 3.0),
    "searchsorted_rows": lambda m: m.searchsorted(m.tensor([[1, 3, 5], [2, 4, 6]]),
                                                  m.tensor([[3, 0], [6, 3]]), right=True),
    "searchsorted_int32": lambda m: m.searchsorted(m.tensor([1.0, 3.0]), m.tensor([2.0]),
                                                   out_int32=True),
    "searchsorted_sorter": lambda m: m.searchsorted(m.tensor([5.0, 1.0, 3.0]),
                                                    m.tensor([3.0, 6.0]),
                                                    sorter=m.tensor([1, 2, 0])),
    "searchsorted_mixed_dtypes": lambda m: m.searchsorted(m.tensor([1.0, 3.0]),
                                                          m.tensor([3, 1])),
    "searchsorted_2d_values": lambda m: m.searchsorted(m.tensor([1.0, 3.0, 5.0]),
                                                       m.tensor([[3.0, 6.0], [1.0, 9.0]])),
    "bucketize": lambda m: m.bucketize(m.tensor([3.0, 6.0, 9.0]), m.tensor([1.0, 3.0, 5.0])),
    "bucketize_right_int32": lambda m: m.bucketize(m.tensor([[3, 6], [9, 0]]),
                                                   m.tensor([1, 3, 5, 7]), right=True,
                                                   out_int32=True),
    "bucketize_scalar": lambda m: m.bucketize(3.0, m.tensor([1.0, 3.0, 5.0])),
    # comparisons and special values
    "isclose": lambda m: m.isclose(m.tensor([1.0, 2.0, INF, NAN, -INF]),
                                   m.tensor([1.0 + 1e-7, 2.1, INF, NAN, INF])),
    "isclose_equal_nan": lambda m: m.isclose(m.tensor([1.0, NAN]), m.tensor([1.0, NAN]),
                                             equal_nan=True),
    "isclose_tolerances": lambda m: m.tensor([1.0, 2.0]).isclose(m.tensor([1.05, 2.5]),
                                                                 rtol=0.1, atol=0.01),
    "isclose_zero_tolerances": lambda m: m.isclose(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.1]),
                                                   rtol=0, atol=0),
    "isclose_int": lambda m: m.isclose(m.tensor([1, 2, 3]), m.tensor([1, 3, 10]), rtol=0.5),
    "isclose_bool": lambda m: m.isclose(m.tensor([True, False]), m.tensor([True, True])),
    "isclose_broadcast": lambda m: m.isclose(m.tensor([[1.0], [2.0]]), m.tensor([1.0, 2.0])),
    "allclose": lambda m: (m.allclose(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.00001])),
                           m.allclose(m.tensor([1.0, 2.0]), m.tensor([[1.0, 2.1]])),
                           m.tensor([1.0]).allclose(m.tensor([1.0]))),
    "equal": lambda m: (m.equal(m.tensor([1, 2]), m.tensor([1.0, 2.0])),
                        m.equal(m.tensor([1, 2]), m.tensor([1, 2, 3])),
                        m.equal(m.tensor([NAN]), m.tensor([NAN])),
                        m.tensor([[1]]).equal(m.tensor([1]))),
    "isposinf_isneginf": lambda m: (m.isposinf(m.tensor([1.0, INF, -INF, NAN])),
                                    m.tensor([1.0, INF, -INF]).isneginf(),
                                    m.isposinf(m.tensor([1, 2])), m.isneginf(m.tensor(True))),
    "isinf_isnan_isfinite": lambda m: (m.isinf(m.tensor([1.0, INF, NAN])),
                                       m.isnan(m.tensor([1.0, INF, NAN])),
                                       m.isfinite(m.tensor([1.0, INF, NAN]))),
    "nan_to_num": lambda m: m.nan_to_num(m.tensor([NAN, INF, -INF, 1.0])),
    "nan_to_num_values": lambda m: m.tensor([NAN, INF, -INF]).nan_to_num(1.0, 2.0, -3.0),
    "nan_to_num_half": lambda m: m.nan_to_num(m.tensor([NAN, INF, -INF], dtype=m.float16)),
    "nan_to_num_int": lambda m: m.nan_to_num(m.tensor([1, 2])),
    "nan_to_num_": lambda m: m.tensor([NAN, 1.0]).nan_to_num_(posinf=3.0),
    # pointwise dtypes and special cases
    "fmod_ints": lambda m: m.fmod(m.tensor([5, -5, 7]), m.tensor([3, 3, -2])),
    "fmod_int_scalar": lambda m: m.fmod(m.tensor([5, -5]), 3),
    "fmod_int_float_scalar": lambda m: m.fmod(m.tensor([1, 2]), 2.5),
    "fmod_float_zero": lambda m: m.fmod(m.tensor([5.0, -5.0]), 0),
    "fmod_": lambda m: m.tensor([5.0, -5.0]).fmod_(3),
    "remainder_ints": lambda m: m.remainder(m.tensor([5, -5, 7]), m.tensor([3, 3, -2])),
    "remainder_scalar_first": lambda m: m.remainder(7, m.tensor([3, -2])),
    "remainder_mod_operator": lambda m: (m.tensor([5.5, -5.5]) % 2, 7.5 % m.tensor([2.0])),
    "remainder_": lambda m: m.tensor([5.0, -5.0]).remainder_(3),
    "atan2_ints": lambda m: m.atan2(m.tensor([1, 2]), m.tensor([1, -1])),
    "atan2_promotes": lambda m: m.atan2(m.tensor([1.0]), _f64(m, [-1.0])),
    "arctan2_": lambda m: m.tensor([1.0, -1.0]).arctan2_(m.tensor([-1.0, -1.0])),
    "atan2_origin": lambda m: m.atan2(m.tensor([0.0, -0.0]), m.tensor([0.0, -1.0])),
    "logaddexp_large": lambda m: m.logaddexp(_f64(m, [1000.0, -INF]), _f64(m, [1000.0, 0.0])),
    "logaddexp2_half": lambda m: m.logaddexp2(m.tensor([1.0, 2.0], dtype=m.float16),
                                              m.tensor([1.0, 3.0], dtype=m.float16)),
    "hypot_mixed": lambda m: m.hypot(m.tensor([3.0], dtype=m.float16), m.tensor([4.0])),
    "hypot_": lambda m: m.tensor([3.0, 5.0]).hypot_(m.tensor([4.0, 12.0])),
    "copysign_ints": lambda m: m.copysign(m.tensor([1, -2]), m.tensor([-1, 1])),
    "copysign_zeros": lambda m: m.copysign(m.tensor([1.0, 2.0]), m.tensor([-0.0, 0.0])),
    "copysign_scalar": lambda m: m.copysign(m.tensor([1.0, -2.0]), -1),
    "xlogy": lambda m: m.xlogy(m.tensor([0.0, 1.0, 0.0, 2.0]), m.tensor([0.0, 0.0, NAN, 3.0])),
    "xlogy_scalars": lambda m: (m.xlogy(2.0, m.tensor([1.0, 2.0])),
                                m.xlogy(m.tensor([1.0, 0.0]), 3), m.xlogy(m.tensor([1, 2]),
                                                                           m.tensor([2, 3]))),
    "xlogy_": lambda m: m.tensor([0.0, 2.0]).xlogy_(m.tensor([0.0, 4.0])),
    "lerp": lambda m: m.lerp(m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0]), 0.5),
    "lerp_broadcast": lambda m: m.lerp(m.tensor([1.0, 2.0]), m.tensor([[3.0], [4.0]]),
                                       m.tensor([0.2, 0.8])),
    "lerp_0d_input": lambda m: m.lerp(m.tensor(1.0), m.tensor([[3.0], [4.0]]), 0.75),
    "lerp_0d_weight_dtype": lambda m: m.lerp(m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0]),
                                             _f64(m, 0.25)),
    "lerp_ends": lambda m: m.lerp(m.tensor([1.0, 1e8]), m.tensor([3.0, -1e-8]),
                                  m.tensor([1.0, 1.0])),
    "lerp_": lambda m: m.tensor([1.0, 2.0]).lerp_(m.tensor([3.0, 4.0]), weight=2),
    "erfc_int": lambda m: m.erfc(m.tensor([1, 2])),
    "erfc_tail": lambda m: m.erfc(_f64(m, [-3.0, 0.3, 1.0, 4.5, 10.0, 27.5, INF, -INF, NAN])),
    "erfinv_int": lambda m: m.erfinv(m.tensor([0, 1, -1])),
    "erfinv_out_of_range": lambda m: m.erfinv(m.tensor([0.5, 1.5, -1.0, NAN])),
    "erfinv_half": lambda m: m.erfinv(m.tensor([0.1, -0.9], dtype=m.float16)),
    "erfc_erfinv_": lambda m: (m.tensor([0.5]).erfc_(), m.tensor([0.5]).erfinv_()),
    "clamp_min_max": lambda m: (m.clamp_min(m.tensor([1, 5]), 2), m.clamp_max(m.tensor([1, 5]),
                                                                               2.5)),
    "clamp_min_tensor": lambda m: m.clamp_min(m.tensor([1.0, 5.0]), m.tensor([2.0, 3.0])),
    "clamp_min_max_": lambda m: m.tensor([1.0, 5.0]).clamp_min_(2.0).clamp_max_(4.0),
    # triangles, flips, rolls, repeats
    "tril_int_batched": lambda m: m.tril(m.ones(2, 3, 4, dtype=m.int64), 1),
    "triu_bool": lambda m: m.ones(3, 3, dtype=m.bool).triu(1),
    "tril_far_diagonal": lambda m: (m.tril(m.ones(2, 3), 5), m.triu(m.ones(2, 3), -5),
                                    m.triu(m.ones(2, 3), 5)),
    "tril_empty": lambda m: m.tril(m.zeros(0, 3)),
    "tril_": lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]).tril_(-1),
    "flip": lambda m: m.flip(m.tensor([[1, 2, 3], [4, 5, 6]]), (0, 1)),
    "flip_method_varargs": lambda m: m.tensor([[1, 2], [3, 4]]).flip(1, 0),
    "flip_method_dims": lambda m: m.tensor([[1, 2], [3, 4]]).flip(dims=[0]),
    "flip_0d_empty": lambda m: (m.flip(m.tensor(5), [0]), m.flip(m.zeros(0, 2), [0, 1]),
                                m.flip(m.ones(2), ())),
    "fliplr_flipud": lambda m: (m.fliplr(m.tensor([[1, 2], [3, 4]])),
                                m.tensor([[1, 2], [3, 4]]).flipud(),
                                m.flipud(m.tensor([1, 2, 3]))),
    "roll": lambda m: m.roll(m.tensor([1, 2, 3, 4]), 1),
    "roll_flat_2d": lambda m: m.roll(m.tensor([[1, 2], [3, 4]]), -1),
    "roll_dims": lambda m: m.tensor([[1, 2, 3], [4, 5, 6]]).roll((1, 1), (0, 1)),
    "roll_same_dim_twice": lambda m: m.roll(m.arange(6).reshape(2, 3), (1, 1), (1, 1)),
    "roll_kwargs": lambda m: m.tensor([[3.0, 1.0]]).roll(shifts=1, dims=1),
    "roll_0d_empty": lambda m: (m.roll(m.tensor(3), 1), m.roll(m.zeros(0, 3), 1)),
    "repeat_interleave_counts_only": lambda m: m.repeat_interleave(m.tensor([1, 2, 3])),
    "repeat_interleave_flat": lambda m: m.tensor([[1, 2], [3, 4]]).repeat_interleave(2),
    "repeat_interleave_tensor": lambda m: m.repeat_interleave(m.tensor([[1, 2], [3, 4]]),
                                                              m.tensor([1, 2]), dim=0),
    "repeat_interleave_one_count": lambda m: m.repeat_interleave(m.tensor([[1, 2], [3, 4]]),
                                                                 m.tensor([2]), dim=1),
    "repeat_interleave_0d_count": lambda m: m.repeat_interleave(m.tensor([[1, 2]]),
                                                                m.tensor(2), dim=-1),
    "repeat_interleave_zero": lambda m: m.repeat_interleave(m.tensor([1.0, 2.0]), 0),
    "repeat_interleave_0d": lambda m: m.repeat_interleave(m.tensor(5), 3),
    "repeat_interleave_empty": lambda m: m.repeat_interleave(m.zeros(0, 2), 2, dim=0),
    "repeat_interleave_output_size": lambda m: m.repeat_interleave(m.tensor([1.0, 2.0]), 2,
                                                                   output_size=4),
    "meshgrid_xy": lambda m: m.meshgrid([m.tensor([1, 2]), m.tensor([3, 4, 5])],
                                        indexing="xy"),
    "meshgrid_three": lambda m: m.meshgrid(m.tensor([1, 2]), m.tensor([1, 2]),
                                           m.tensor([1, 2, 3]), indexing="xy"),
    "meshgrid_0d_one": lambda m: (m.meshgrid(m.tensor(1), m.tensor([3, 4]), indexing="ij"),
                                  m.meshgrid(m.tensor([1, 2]), indexing="xy")),
    # indexing
    "scatter_value": lambda m: m.scatter(m.zeros(3, 4), 0, m.tensor([[0, 1], [2, 0]]), 7.5),
    "scatter_int_value": lambda m: m.scatter(m.zeros(2, 3), 1, m.tensor([[0], [2]]), 7),
    "scatter_int32_index": lambda m: m.scatter(m.zeros(3), 0, m.tensor([2], dtype=m.int32),
                                               m.tensor([1.0])),
    "scatter_value_keyword": lambda m: m.zeros(2, 3).scatter(1, m.tensor([[1], [0]]),
                                                             value=-1.0),
    "scatter_0d": lambda m: m.scatter(m.tensor(1.0), 0, m.tensor(0), m.tensor(5.0)),
    "scatter_empty_index": lambda m: m.scatter(m.ones(2, 2), 0, m.zeros(0, 2, dtype=m.int64),
                                               m.ones(1, 2)),
    "scatter_": lambda m: m.zeros(2, 3).scatter_(1, m.tensor([[2], [0]]),
                                                 m.tensor([[1.0], [2.0]])),
    "index_copy": lambda m: m.index_copy(m.zeros(3, 2), 1, m.tensor([1, 0]),
                                         m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])),
    "index_copy_0d_index": lambda m: m.index_copy(m.zeros(3, 2), 1, m.tensor(1),
                                                  m.ones(3, 1)),
    "index_copy_scalars": lambda m: (m.index_copy(m.zeros(3), 0, m.tensor([1]), m.tensor(1.0)),
                                     m.index_copy(m.zeros(()), 0, m.tensor([0]),
                                                  m.tensor(1.0))),
    "index_copy_": lambda m: m.zeros(2, 2).index_copy_(0, m.tensor([1]), m.ones(1, 2)),
    "index_add": lambda m: m.index_add(m.zeros(3), 0, m.tensor([0, 2, 0]),
                                       m.tensor([1.0, 2.0, 3.0])),
    "index_add_alpha_int": lambda m: m.index_add(m.arange(3), 0, m.tensor([2, 1]),
                                                 m.tensor([1, 1]), alpha=2),
    "index_add_int32_index": lambda m: m.index_add(m.zeros(3), 0, m.tensor([0, 1],
                                                                           dtype=m.int32),
                                                   m.tensor([1.0, 2.0])),
    "index_add_0d": lambda m: m.index_add(m.zeros(()), 0, m.tensor([0]), m.tensor(1.0)),
    "index_add_": lambda m: m.ones(2, 2).index_add_(1, m.tensor([1, 1]), m.ones(2, 2),
                                                    alpha=-1),
    "masked_select": lambda m: m.masked_select(m.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                               m.tensor([[True, False], [False, True]])),
    "masked_select_broadcast": lambda m: m.masked_select(m.tensor([1.0, 2.0]),
                                                         m.tensor([[True], [False]])),
    "masked_select_0d": lambda m: (m.masked_select(m.zeros(()), m.tensor(True)),
                                   m.masked_select(m.tensor([1, 2]), m.tensor([False, False]))),
    "masked_scatter": lambda m: m.masked_scatter(m.zeros(3), m.tensor([True, False, True]),
                                                 m.tensor([[1.0, 2.0], [3.0, 4.0]])),
    "masked_scatter_broadcast": lambda m: m.masked_scatter(m.tensor([1.0, 2.0]),
                                                           m.tensor([[True], [False]]),
                                                           -m.arange(10.0)),
    "masked_scatter_0d": lambda m: m.masked_scatter(m.zeros(()), m.tensor(True),
                                                    m.tensor([7.0])),
    "masked_scatter_": lambda m: m.zeros(3, 2).masked_scatter_(m.tensor([[True], [False],
                                                                        [True]]),
                                                              m.arange(1.0, 7.0)),
    "take_along_dim": lambda m: m.take_along_dim(m.arange(12.0).reshape(3, 4),
                                                 m.tensor([[0, 3]]), 1),
    "take_along_dim_flat_method": lambda m: m.arange(12).reshape(3, 4).take_along_dim(
        m.tensor([0, 5, 11])),
    "take_along_dim_negative_dim": lambda m: m.take_along_dim(m.arange(6).reshape(2, 3),
                                                              m.tensor([[2], [0]]), -1),
    # matrices
    "diagonal_3d": lambda m: m.diagonal(m.arange(24.0).reshape(2, 3, 4), 1, 0, 2),
    "diagonal_last_dims": lambda m: m.arange(24).reshape(2, 3, 4).diagonal(0, -1, -2),
    "diagonal_keywords": lambda m: m.diagonal(m.arange(24.0).reshape(2, 3, 4), dim1=1, dim2=2,
                                              offset=-1),
    "diagonal_past_the_end": lambda m: m.diagonal(m.ones(2, 3, 4), offset=5, dim1=1, dim2=2),
    "trace": lambda m: (m.trace(m.arange(6.0).reshape(2, 3)),
                        m.trace(m.ones(2, 3, dtype=m.int32)), m.zeros(0, 0).trace()),
    "trace_half": lambda m: m.trace(m.ones(2, 2, dtype=m.float16)),
    "outer_ger": lambda m: (m.outer(m.tensor([1, 2]), m.tensor([1.0, 2.0, 3.0])),
                            m.tensor([1.0, 2.0]).ger(m.tensor([3.0, 4.0]))),
    "cross": lambda m: m.cross(m.tensor([[1, 0, 0], [0, 1, 0]]), m.tensor([[0, 1, 0],
                                                                            [0, 0, 1]]), dim=1),
    "cross_broadcast": lambda m: m.cross(m.tensor([[1.0, 2.0, 3.0]]),
                                         m.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 1.0]]), -1),
    "cdist": lambda m: m.cdist(m.tensor([[0.0, 0.0], [1.0, 1.0]]), m.tensor([[3.0, 4.0],
                                                                            [1.0, 1.0]])),
    "cdist_p": lambda m: (m.cdist(m.tensor([[0.0, 0.0]]), m.tensor([[3.0, -4.0]]), p=1),
                          m.cdist(m.tensor([[0.0, 0.0]]), m.tensor([[3.0, -4.0]]), p=INF),
                          m.cdist(m.tensor([[0.0, 0.0]]), m.tensor([[3.0, 0.0]]), p=0),
                          m.cdist(m.tensor([[0.0, 0.0]]), m.tensor([[3.0, -4.0]]), p=3)),
    "cdist_batch": lambda m: m.cdist(_f64(m, np.arange(12.0).reshape(2, 1, 2, 3)),
                                     _f64(m, np.ones((4, 3)) * [[0.5], [1.0], [2.0], [3.0]])),
    "cdist_large_mm": lambda m: m.cdist(_f64(m, np.linspace(0, 1, 90).reshape(30, 3)),
                                        _f64(m, np.linspace(-1, 2, 60).reshape(20, 3))),
    "einsum": lambda m: m.einsum("ij,jk->ik", m.arange(6.0).reshape(2, 3),
                                 m.arange(12.0).reshape(3, 4)),
    "einsum_ints": lambda m: m.einsum("ij,jk", m.arange(6).reshape(2, 3),
                                      m.arange(12).reshape(3, 4)),
    "einsum_implicit_order": lambda m: (m.einsum("ba", m.arange(6.0).reshape(2, 3)),
                                        m.einsum("bA", m.arange(6.0).reshape(2, 3)),
                                        m.einsum("Ab,b", m.arange(6.0).reshape(2, 3),
                                                 m.tensor([1.0, 2.0, 3.0]))),
    "einsum_diag_trace_sum": lambda m: (m.einsum("ii", m.arange(9.0).reshape(3, 3)),
                                        m.einsum("ii->i", m.arange(9.0).reshape(3, 3)),
                                        m.einsum("ij->", m.arange(6.0).reshape(2, 3)),
                                        m.einsum("i j -> j i", m.arange(6.0).reshape(2, 3))),
    "einsum_ellipsis": lambda m: m.einsum("...ij,...jk", m.ones(2, 1, 2, 3), m.ones(5, 3, 4)),
    "einsum_broadcast_one": lambda m: m.einsum("ij,ij->ij", m.ones(3, 1), m.ones(3, 4) * 2),
    "einsum_list_and_sublists": lambda m: (m.einsum("i,j", [m.tensor([1.0, 2.0]),
                                                            m.tensor([1.0, 2.0, 3.0])]),
                                           m.einsum(m.arange(6.0).reshape(2, 3), [0, 1],
                                                    m.arange(3.0), [1], [0])),
    "einsum_scalar_empty": lambda m: (m.einsum("", m.tensor(2.0)),
                                      m.einsum("i->", m.zeros(0)),
                                      m.einsum("ij,jk->ik", m.zeros(2, 0), m.zeros(0, 3))),
}

# a representative subset, run on every device under test (the CUDA stand-in included)
ON_DEVICES = ["sort", "sort_descending", "topk", "kthvalue_keepdim", "argsort_descending",
              "unique_inverse_counts", "bincount_weights_f32", "histc_edges", "histc_many",
              "searchsorted_rows", "searchsorted_sorter", "bucketize", "isclose",
              "nan_to_num", "fmod_ints", "xlogy", "lerp_broadcast", "erfc_tail",
              "erfinv_out_of_range", "tril_int_batched", "flip", "roll_dims",
              "repeat_interleave_counts_only", "repeat_interleave_tensor", "scatter_value",
              "index_copy", "index_add", "masked_select_broadcast", "masked_scatter_broadcast",
              "take_along_dim", "diagonal_3d", "cross_broadcast", "cdist_large_mm",
              "einsum_diag_trace_sum", "einsum_ellipsis", "meshgrid_xy", "count_nonzero_dims",
              "aminmax_dim_keepdim", "std_mean_dims"]


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _plain(value):
    """A result as plain data: tensors as (values, dtype name, shape), recursively."""
    import torch

    if isinstance(value, gc.Tensor):
        return ("tensor", host(value.detach()), _dtype_name(value.dtype), tuple(value.shape))
    if isinstance(value, torch.Tensor):
        return ("tensor", value.detach().numpy(), _dtype_name(value.dtype),
                tuple(value.shape))
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def _assert_same(ours, theirs, where=""):
    if isinstance(theirs, tuple) and theirs and theirs[0] == "tensor":
        assert isinstance(ours, tuple) and ours[0] == "tensor", f"{where}: not a tensor"
        _, a, a_dtype, a_shape = ours
        _, b, b_dtype, b_shape = theirs
        assert (a_dtype, a_shape) == (b_dtype, b_shape), where
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-6 if a.dtype == np.float64 else 1e-3,
                                       atol=1e-12, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _assert_same(a, b, f"{where}[{k}]")
    else:
        assert type(ours) is type(theirs) and ours == theirs, f"{where}: {ours!r} {theirs!r}"


def _compare(name):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a case that warns in either is a test error)
        # but for NumPy's floating-point warnings inside gradcore, which gradcore hides
        # (and the CuPy stand-in's: CuPy computes on the device without them)
        warnings.filterwarnings("ignore", category=RuntimeWarning,
                                module=r"(gradcore|cupy_standin)(\.|$)")
        ours, theirs = CASES[name](gc), CASES[name](torch)
    _assert_same(_plain(ours), _plain(theirs), name)
    return ours, theirs


# cases PyTorch runs from 2.13 on, with what older PyTorch does instead
CASES_OF_2_13 = {"trace_half": "PyTorch 2.11's CPU trace has no Half kernel"}


@needs_torch
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pinned_torch_only(CASES_OF_2_13[n])) if n in CASES_OF_2_13
    else n for n in sorted(CASES)])
def test_matches_pytorch(name):
    ours, theirs = _compare(name)
    if type(theirs).__module__ == "torch.return_types":  # named as PyTorch's, same fields
        assert type(ours).__name__ == type(theirs).__name__
        for field in ("values", "indices", "min", "max"):
            if hasattr(theirs, field):
                _assert_same(_plain(getattr(ours, field)), _plain(getattr(theirs, field)),
                             field)


@needs_torch
@pytest.mark.parametrize("name", ON_DEVICES)
def test_matches_pytorch_on_device(name, device):
    ours, _ = _compare(name)
    for t in ours if isinstance(ours, tuple) else (ours,):
        for u in t if isinstance(t, tuple) else (t,):
            assert u.device.type == gc.device(device).type, name


# ---- errors: the same exception type as PyTorch's ----------
ERRORS = {
    "sort_dim": lambda m: m.sort(m.ones(2, 3), 2),
    "topk_k_too_large": lambda m: m.topk(m.tensor([3.0, 1.0, 2.0]), 4),
    "topk_negative_k": lambda m: m.topk(m.tensor([3.0, 1.0, 2.0]), -1),
    "kthvalue_k0": lambda m: m.kthvalue(m.tensor([3, 1, 2]), 0),
    "kthvalue_k_too_large": lambda m: m.kthvalue(m.tensor([3, 1, 2]), 4),
    "aminmax_empty": lambda m: m.aminmax(m.zeros(0, 3)),
    "aminmax_empty_dim": lambda m: m.aminmax(m.zeros(3, 0), dim=1),
    "aminmax_tuple_dim": lambda m: m.aminmax(m.ones(2, 3), dim=(0, 1)),
    "var_mean_int": lambda m: m.var_mean(m.tensor([[1, 2]])),
    "bincount_negative": lambda m: m.bincount(m.tensor([0, -1])),
    "bincount_2d": lambda m: m.bincount(m.tensor([[0, 1]])),
    "bincount_float": lambda m: m.bincount(m.tensor([0.0, 1.0])),
    "bincount_bool": lambda m: m.bincount(m.tensor([True, False])),
    "bincount_minlength": lambda m: m.bincount(m.tensor([0, 1]), minlength=-1),
    "bincount_weights_length": lambda m: m.bincount(m.tensor([0, 1]), m.tensor([1.0, 2.0, 3.0])),
    "histc_int": lambda m: m.histc(m.tensor([1, 2]), bins=4),
    "histc_bins": lambda m: m.histc(m.tensor([1.0, 2.0]), bins=0),
    "histc_min_above_max": lambda m: m.histc(m.tensor([1.0, 2.0]), bins=3, min=3, max=1),
    "histc_infinite_range": lambda m: m.histc(m.tensor([1.0, INF]), bins=3),
    "searchsorted_side_right_opposite": lambda m: m.searchsorted(m.tensor([1.0, 2.0]),
                                                                 m.tensor([1.0]), side="left",
                                                                 right=True),
    "searchsorted_bad_side": lambda m: m.searchsorted(m.tensor([1.0, 2.0]), m.tensor([1.0]),
                                                      side="middle"),
    "searchsorted_0d": lambda m: m.searchsorted(m.tensor(3.0), m.tensor([3.0])),
    "searchsorted_rows_mismatch": lambda m: m.searchsorted(m.tensor([[1, 3], [2, 4]]),
                                                           m.tensor([[3], [3], [3]])),
    "bucketize_2d_boundaries": lambda m: m.bucketize(m.tensor([3.0]), m.tensor([[1.0, 2.0]])),
    "isclose_dtypes": lambda m: m.isclose(m.tensor([1.0]), m.tensor([1])),
    "isclose_number": lambda m: m.isclose(m.tensor([1.0]), 1.0),
    "isclose_rtol": lambda m: m.isclose(m.tensor([1.0]), m.tensor([1.0]), rtol=-1),
    "isclose_atol": lambda m: m.isclose(m.tensor([1.0]), m.tensor([1.0]), atol=-0.5),
    "allclose_shapes": lambda m: m.allclose(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0, 3.0])),
    "fmod_int_zero": lambda m: m.fmod(m.tensor([5, -5]), 0),
    "fmod_int_zero_tensor": lambda m: m.fmod(m.tensor([5, -5]), m.tensor([0, 3])),
    "fmod_number_first": lambda m: m.fmod(2, m.tensor([1, 2])),
    "fmod_bool": lambda m: m.fmod(m.tensor([True]), m.tensor([True])),
    "remainder_int_zero": lambda m: m.remainder(m.tensor([5]), 0),
    "atan2_number": lambda m: m.atan2(m.tensor([1.0]), 2.0),
    "atan2_number_first": lambda m: m.atan2(1, m.tensor([1.0])),
    "logaddexp_int": lambda m: m.logaddexp(m.tensor([1]), m.tensor([2])),
    "logaddexp2_number": lambda m: m.logaddexp2(m.tensor([1.0]), 2),
    "hypot_int": lambda m: m.hypot(m.tensor([3]), m.tensor([4])),
    "copysign_number_first": lambda m: m.copysign(2, m.tensor([1.0])),
    "lerp_end_dtype": lambda m: m.lerp(m.tensor([1.0]), _f64(m, [2.0]), 0.5),
    "lerp_weight_dtype": lambda m: m.lerp(m.tensor([1.0]), m.tensor([2.0]), _f64(m, [0.5])),
    "lerp_0d_end_dtype": lambda m: m.lerp(m.tensor([1.0]), _f64(m, 2.0), 0.5),
    "lerp_int": lambda m: m.lerp(m.tensor([1]), m.tensor([2]), 0.5),
    "lerp_end_number": lambda m: m.lerp(m.tensor([1.0]), 3.0, 0.5),
    "tril_1d": lambda m: m.tril(m.tensor([1, 2, 3])),
    "triu_0d": lambda m: m.triu(m.tensor(1.0)),
    "flip_repeated_dim": lambda m: m.flip(m.ones(2, 3), (0, -2)),
    "flip_dim_range": lambda m: m.flip(m.ones(2, 3), (2,)),
    "fliplr_1d": lambda m: m.fliplr(m.tensor([1, 2])),
    "flipud_0d": lambda m: m.flipud(m.tensor(1)),
    "roll_misaligned": lambda m: m.roll(m.ones(2, 2), (1, 1), 0),
    "roll_no_shifts": lambda m: m.roll(m.ones(2, 3), (), ()),
    "roll_dim_range": lambda m: m.roll(m.ones(3), 1, 1),
    "roll_0d_dim": lambda m: m.roll(m.tensor(3), 1, 0),
    "repeat_interleave_count_size": lambda m: m.repeat_interleave(m.tensor([[1, 2], [3, 4]]),
                                                                  m.tensor([1, 2, 3]), dim=0),
    "repeat_interleave_negative_count": lambda m: m.repeat_interleave(m.tensor([1, 2]),
                                                                      m.tensor([-1, 2])),
    "repeat_interleave_negative_int": lambda m: m.repeat_interleave(m.tensor([1, 2]), -1),
    "repeat_interleave_float_counts": lambda m: m.repeat_interleave(m.tensor([1.0, 2.0]),
                                                                    m.tensor([1.0, 2.0])),
    "repeat_interleave_2d_counts": lambda m: m.repeat_interleave(m.tensor([[1, 2]]),
                                                                 m.tensor([[1, 2]]), dim=1),
    "repeat_interleave_0d_dim": lambda m: m.repeat_interleave(m.tensor(5), 3, dim=0),
    "repeat_interleave_float": lambda m: m.repeat_interleave(m.tensor([1.0]), 2.0),
    "meshgrid_dtypes": lambda m: m.meshgrid(m.tensor([1, 2]), m.tensor([3.0]), indexing="ij"),
    "meshgrid_2d": lambda m: m.meshgrid(m.tensor([[1]]), m.tensor([3]), indexing="ij"),
    "meshgrid_indexing": lambda m: m.meshgrid(m.tensor([1, 2]), indexing="foo"),
    "meshgrid_nothing": lambda m: m.meshgrid(),
    "scatter_src_dtype": lambda m: m.scatter(m.zeros(3, 4), 0, m.tensor([[0, 1]]),
                                             _f64(m, [[1.0, 1.0]])),
    "scatter_index_range": lambda m: m.scatter(m.zeros(3, 4), 0, m.tensor([[0, 3]]),
                                               m.ones(2, 2)),
    "scatter_index_too_large": lambda m: m.scatter(m.zeros(3, 4), 0, m.tensor([[0, 1, 2, 0, 1]]),
                                                   m.ones(2, 2)),
    "scatter_float_index": lambda m: m.scatter(m.zeros(3, 4), 0, m.tensor([[0.0]]),
                                               m.ones(1, 1)),
    "scatter_index_dims": lambda m: m.scatter(m.zeros(3, 4), 0, m.tensor([0, 1]), m.ones(2, 2)),
    "scatter_0d_value_tensor": lambda m: m.scatter(m.zeros(3, 4), 1, m.tensor([[0, 1]]),
                                                   m.tensor(2.0)),
    "index_copy_dtype": lambda m: m.index_copy(m.zeros(3, 4), 0, m.tensor([2, 0]),
                                               _f64(m, np.ones((2, 4)))),
    "index_copy_count": lambda m: m.index_copy(m.zeros(3, 4), 0, m.tensor([2, 0]),
                                               m.ones(3, 4)),
    "index_copy_range": lambda m: m.index_copy(m.zeros(3, 4), 0, m.tensor([2, 3]),
                                               m.ones(2, 4)),
    "index_copy_2d_index": lambda m: m.index_copy(m.zeros(3, 4), 0, m.tensor([[2, 0]]),
                                                  m.ones(2, 4)),
    "index_copy_int32_index": lambda m: m.index_copy(m.zeros(3, 4), 1,
                                                     m.tensor([2, 0], dtype=m.int32),
                                                     m.ones(3, 2)),
    "index_copy_ndim": lambda m: m.index_copy(m.zeros(3, 2), 0, m.tensor([1]),
                                              m.tensor([1.0, 1.0])),
    "index_copy_slices": lambda m: m.index_copy(m.zeros(3, 2), 0, m.tensor([1]),
                                                m.ones(1, 3)),
    "index_add_dtype": lambda m: m.index_add(m.zeros(3, 4), 0, m.tensor([2, 2]),
                                             _f64(m, np.ones((2, 4)))),
    "index_add_range": lambda m: m.index_add(m.zeros(3, 4), 0, m.tensor([2, 3]), m.ones(2, 4)),
    "index_add_negative": lambda m: m.index_add(m.zeros(3, 4), 0, m.tensor([2, -1]),
                                                m.ones(2, 4)),
    "index_add_shape": lambda m: m.index_add(m.zeros(3, 4), 0, m.tensor([2, 1]), m.ones(2, 3)),
    "index_add_count": lambda m: m.index_add(m.zeros(3, 2), 0, m.tensor([1]), m.ones(2, 2)),
    "index_add_2d_index": lambda m: m.index_add(m.zeros(3), 0, m.tensor([[0, 1]]),
                                                m.ones(1, 2)),
    "masked_select_mask_dtype": lambda m: m.masked_select(m.ones(2), m.tensor([1, 0])),
    "masked_select_shapes": lambda m: m.masked_select(m.ones(2), m.tensor([True, False, True])),
    "masked_scatter_mask_dtype": lambda m: m.masked_scatter(m.zeros(3), m.tensor([1, 0, 1]),
                                                            m.ones(2)),
    "masked_scatter_too_few": lambda m: m.masked_scatter(m.zeros(3), m.tensor([True] * 3),
                                                         m.ones(2)),
    "masked_scatter_dtype": lambda m: m.masked_scatter(m.zeros(3), m.tensor([True] * 3),
                                                       _f64(m, [1.0, 2.0, 3.0])),
    "take_along_dim_ndim": lambda m: m.take_along_dim(m.ones(2, 3), m.tensor([0, 1]), 1),
    "take_along_dim_int32": lambda m: m.take_along_dim(m.ones(2, 3),
                                                       m.tensor([[0]], dtype=m.int32), 1),
    "take_along_dim_shapes": lambda m: m.take_along_dim(m.ones(3, 4), m.tensor([[0], [1]]), 1),
    "diagonal_same_dims": lambda m: m.diagonal(m.ones(2, 3, 4), 0, 1, 1),
    "diagonal_1d": lambda m: m.diagonal(m.tensor([1.0, 2.0])),
    "trace_1d": lambda m: m.trace(m.tensor([1.0, 2.0])),
    "trace_bool": lambda m: m.trace(m.ones(2, 2, dtype=m.bool)),
    "outer_2d": lambda m: m.outer(m.ones(1, 2), m.ones(3)),
    "cross_ndim": lambda m: m.cross(m.ones(3), m.ones(3, 1), dim=0),
    "cross_dim_range": lambda m: m.cross(m.ones(2, 3), m.ones(2, 3), dim=5),
    "cross_no_size_3": lambda m: m.cross(m.ones(2, 2), m.ones(2, 2)),
    "cross_size": lambda m: m.cross(m.ones(2, 4), m.ones(2, 4), dim=1),
    "cross_dtype": lambda m: m.cross(m.ones(2, 3), _f64(m, np.ones((2, 3))), dim=1),
    "cdist_negative_p": lambda m: m.cdist(m.ones(2, 3), m.ones(4, 3), p=-1),
    "cdist_1d": lambda m: m.cdist(m.ones(3), m.ones(4, 3)),
    "cdist_columns": lambda m: m.cdist(m.ones(2, 3), m.ones(4, 2)),
    "cdist_int": lambda m: m.cdist(m.ones(2, 3, dtype=m.int64), m.ones(4, 3, dtype=m.int64)),
    "cdist_dtypes": lambda m: m.cdist(m.ones(2, 3), _f64(m, np.ones((4, 3)))),
    "einsum_dtypes": lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), _f64(m, np.ones((3, 4)))),
    "einsum_sizes": lambda m: m.einsum("ij,ij->ij", m.ones(3, 2), m.ones(3, 4)),
    "einsum_fewer_operands": lambda m: m.einsum("ij,jk->ik", m.ones(2, 3)),
    "einsum_subscripts": lambda m: m.einsum("ijk,jk->ik", m.ones(2, 3), m.ones(3, 4)),
    "einsum_unknown_output": lambda m: m.einsum("ij->ijk", m.ones(2, 3)),
    "einsum_repeated_output": lambda m: m.einsum("ij->ii", m.ones(2, 3)),
    "einsum_mismatched_diagonal": lambda m: m.einsum("ii->i", m.ones(2, 3)),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            ERRORS[name](torch)
        expected = type(theirs.value)
        assert expected.__module__ == "builtins", expected  # (an exception anyone catches)
        with pytest.raises(expected):
            ERRORS[name](gc)


def test_errors_name_what_was_wrong():
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        gc.topk(gc.tensor([1.0, 2.0]), 3)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along "
                                           "dim, but got repeats.size\\(0\\) = 3"):
        gc.repeat_interleave(gc.ones(2, 2), gc.tensor([1, 2, 3]), dim=0)
    with pytest.raises(RuntimeError, match="einsum\\(\\): subscript j has size 4 for operand 1"):
        gc.einsum("ij,ij->ij", gc.ones(3, 2), gc.ones(3, 4))
    with pytest.raises(RuntimeError, match="Expected index \\[1, 5\\] to be no larger than "
                                           "self \\[3, 4\\] apart from dimension 0"):
        gc.scatter(gc.zeros(3, 4), 0, gc.tensor([[0, 1, 2, 0, 1]]), gc.ones(2, 2))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        gc.index_copy(gc.zeros(3, 4), 0, gc.tensor([2, 3]), gc.ones(2, 4))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. "
                                           "X1: 3 X2: 2"):
        gc.cdist(gc.ones(2, 3), gc.ones(4, 2))


def test_index_errors_on_a_device_come_with_the_next_read(device):
    """On a GPU the index checks wait for the next read of values (backend.check_range),
    as PyTorch's device-side assertions do; on the CPU the op raises itself."""
    with pytest.raises(RuntimeError, match="out of bounds for dimension 0 with size 3"):
        gc.scatter(gc.zeros(3), 0, gc.tensor([5]), 1.0).tolist()
    with pytest.raises(RuntimeError, match="out of bounds for dimension 0 with size 3"):
        gc.index_add(gc.zeros(3), 0, gc.tensor([0, 3]), gc.ones(2)).tolist()
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        gc.masked_scatter(gc.zeros(3), gc.tensor([True] * 3), gc.ones(2)).tolist()
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
        gc.bincount(gc.tensor([1, -1])).tolist()


# ---- warnings, in-place forms, namespaces ----------
@needs_torch
def test_meshgrid_and_cross_warn_as_pytorch_without_their_argument():
    """PyTorch's warnings (which it gives once a process, so they are not compared here),
    and cross's default dim, the first of size 3."""
    import torch

    with pytest.warns(UserWarning, match="in an upcoming release, it will be required to "
                                         "pass the indexing argument"):
        gc.meshgrid(gc.tensor([1, 2]), gc.tensor([3, 4]))
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg "
                                         "is deprecated"):
        ours = gc.cross(gc.tensor([[1.0, 2.0], [0.0, 1.0], [3.0, 0.0]]), gc.ones(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.cross(torch.tensor([[1.0, 2.0], [0.0, 1.0], [3.0, 0.0]]),
                             torch.ones(3, 2))
    np.testing.assert_array_equal(host(ours), theirs.numpy())


@needs_torch
def test_names_exist_where_pytorch_has_them():
    import torch

    names = """tril triu einsum flip fliplr flipud roll sort argsort topk kthvalue msort
    repeat_interleave scatter index_copy index_add masked_select masked_scatter
    take_along_dim diagonal trace outer ger cross cdist clamp_min clamp_max fmod remainder
    lerp atan2 arctan2 logaddexp logaddexp2 hypot copysign erfc erfinv xlogy isclose
    allclose equal isinf isposinf isneginf isnan isfinite nan_to_num std_mean var_mean
    aminmax count_nonzero unique bincount histc meshgrid bucketize searchsorted""".split()
    for name in names:
        assert hasattr(gc, name) == hasattr(torch, name), name
        assert hasattr(gc.Tensor, name) == hasattr(torch.Tensor, name), name
        assert hasattr(gc.Tensor, name + "_") == hasattr(torch.Tensor, name + "_"), name


def test_in_place_forms_are_tracked(device):
    x = gc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    y.tril_().index_add_(0, gc.tensor([1]), gc.ones(1, 2) * 2, alpha=0.5)
    y.clamp_min_(1.5).nan_to_num_()
    assert y.grad_fn is not None and y._version > 0
    y.sum().backward()
    # tril keeps [0, 0], [1, 0], [1, 1]; clamp_min passes values >= 1.5 (so not [0, 0])
    np.testing.assert_array_equal(host(x.grad), [[0.0, 0.0], [1.0, 1.0]])


def test_return_types_have_pytorch_fields():
    s = gc.sort(gc.tensor([2.0, 1.0]))
    assert (s.values.tolist(), s.indices.tolist()) == ([1.0, 2.0], [1, 0])
    values, indices = gc.topk(gc.tensor([2.0, 1.0]), 1)
    assert (values.tolist(), indices.tolist()) == ([2.0], [0])
    k = gc.kthvalue(gc.tensor([2.0, 1.0]), 1)
    assert (k.values.item(), k.indices.item()) == (1.0, 1)
    mm = gc.aminmax(gc.tensor([2.0, 1.0]))
    assert (mm.min.item(), mm.max.item()) == (1.0, 2.0)
    assert type(gc.unique(gc.tensor([1, 1]))) is gc.Tensor
    assert not gc.unique(gc.tensor([1.0], requires_grad=True)).requires_grad


# ---- gradients the op table cannot take from PyTorch ----------
def _gradcheck(fn, *arrays):
    inputs = [gc.tensor(a, dtype=gc.float64, requires_grad=True) for a in arrays]
    assert gc.autograd.gradcheck(fn, inputs)
    assert gc.autograd.gradgradcheck(fn, inputs)


def test_scatter_with_a_larger_source_sends_the_unused_part_no_gradient(device):
    """PyTorch's own backward fails here (it returns the gathered shape for src)."""
    index = gc.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    rng = np.random.default_rng(0)
    _gradcheck(lambda a, b: gc.scatter(a, 0, index, b) * 1.5, rng.standard_normal((3, 4)),
               rng.standard_normal((2, 5)))
    b = gc.ones(2, 5, requires_grad=True)
    gc.scatter(gc.zeros(3, 4), 0, index, b).sum().backward()
    np.testing.assert_array_equal(host(b.grad), [[1, 1, 1, 1, 0], [1, 1, 1, 1, 0]])


def test_remainder_of_a_number_by_a_tensor_is_differentiable(device):
    """PyTorch records no derivative for ``number % tensor``; its value's is
    ``-floor(number / x)``."""
    rng = np.random.default_rng(1)
    _gradcheck(lambda x: gc.remainder(2.5, x), rng.uniform(0.6, 0.9, (3,)) *
               np.array([1.0, -1.0, 1.0]))


def test_lerp_with_a_0d_weight_and_scalars_broadcast(device):
    rng = np.random.default_rng(2)
    _gradcheck(lambda a, b, w: gc.lerp(a, b, w), rng.standard_normal((2, 3)),
               rng.standard_normal((3,)), np.array(0.7))


def test_cdist_gradients_at_zero_distance_and_p_inf(device):
    a = gc.tensor([[0.0, 1.0], [2.0, 2.0]], dtype=gc.float64, requires_grad=True)
    b = gc.tensor([[0.0, 1.0]], dtype=gc.float64, requires_grad=True)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        a.grad = b.grad = None
        gc.cdist(a, b, compute_mode=mode).sum().backward()
        assert np.isfinite(host(a.grad)).all() and host(a.grad)[0].tolist() == [0.0, 0.0]
    rng = np.random.default_rng(3)
    _gradcheck(lambda x, y: gc.cdist(x, y, p=float("inf")), rng.standard_normal((3, 2)),
               rng.standard_normal((2, 2)))


def test_einsum_gradients_of_diagonals_and_summed_letters(device):
    rng = np.random.default_rng(4)
    _gradcheck(lambda a, b: gc.einsum("iij,jk->ik", a, b), rng.standard_normal((3, 3, 2)),
               rng.standard_normal((2, 4)))
    _gradcheck(lambda a: gc.einsum("i...i->...", a), rng.standard_normal((3, 2, 3)))


# ---- erfc / erfinv accuracy ----------
def test_erfc_is_accurate_where_one_minus_erf_is_not():
    xs = np.concatenate([np.linspace(-6.0, 27.0, 3301), [0.5, 4.0, 26.5]])
    got = host(gc.erfc(gc.tensor(xs, dtype=gc.float64)))
    ref = np.array([math.erfc(v) for v in xs])
    normal = ref > 1e-300  # (subnormal results carry fewer bits)
    np.testing.assert_allclose(got[normal], ref[normal], rtol=4 * 2.0 ** -52)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-320)


def test_erfinv_inverts_erf():
    ys = np.concatenate([np.linspace(-0.999, 0.999, 2001), 1 - np.logspace(-15, -1, 30)])
    xs = host(gc.erfinv(gc.tensor(ys, dtype=gc.float64)))
    back = np.array([math.erf(v) for v in xs])
    np.testing.assert_allclose(back, ys, rtol=0, atol=4 * 2.0 ** -52)
    tail = 1 - np.logspace(-15, -1, 30)  # the tail, through erfc (1 - y is exact there)
    xs = host(gc.erfinv(gc.tensor(tail, dtype=gc.float64)))
    np.testing.assert_allclose([math.erfc(v) for v in xs], 1 - tail, rtol=1e-12)


@needs_torch
def test_erfc_erfinv_match_pytorch_in_float64_and_float32():
    import torch

    rng = np.random.default_rng(5)
    for dtype, rtol in ((np.float64, 1e-14), (np.float32, 3e-7)):
        x = rng.uniform(-4, 9, 2000).astype(dtype)
        np.testing.assert_allclose(host(gc.erfc(gc.tensor(x))),
                                   torch.erfc(torch.tensor(x)).numpy(), rtol=rtol, atol=1e-300)
        y = rng.uniform(-0.9999, 0.9999, 2000).astype(dtype)
        np.testing.assert_allclose(host(gc.erfinv(gc.tensor(y))),
                                   torch.erfinv(torch.tensor(y)).numpy(), rtol=rtol)


def test_ops_page_example_runs(capsys):
    """docs/ops.md: its example runs and prints what its comments say."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "ops.md").read_text()
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        exec(compile(block, "docs/ops.md", "exec"), namespace)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["gradcore.Size([2, 3]) [[0, 2, 1], [1, 2, 0]]",
                     "[1, 2, 0, 1] [1, 3] [1, 0, 1] [0, 1, 2]"]


def test_no_op_here_waits_for_the_device_unless_its_size_depends_on_values(standin):
    """On the CUDA stand-in (which counts every host synchronization): the forward and
    backward of these ops never read a value back (docs/ops.md says which do)."""
    rng = np.random.default_rng(6)
    x = gc.tensor(rng.standard_normal((4, 5)), device="cuda", requires_grad=True)
    y = gc.tensor(rng.standard_normal((4, 5)), device="cuda", requires_grad=True)
    w = gc.tensor(rng.uniform(-0.9, 0.9, (4, 5)), device="cuda", requires_grad=True)
    idx = gc.tensor([[0, 2, 1, 4, 3]], device="cuda")
    mask = gc.tensor(rng.random((4, 5)) < 0.5, device="cuda")
    seq = gc.tensor([-1.0, 0.0, 1.0], device="cuda")
    standin.reset_syncs(log=True)
    terms = [
        x.sort(1).values, gc.topk(x, 2).values, gc.kthvalue(x, 2, 0, True).values,
        gc.flip(x, (0,)), x.roll(1, 1), gc.tril(x), gc.triu(y, 1), x.repeat_interleave(2, 0),
        gc.scatter(x, 0, idx, y[:1]), gc.index_add(x, 0, gc.tensor([1, 1], device="cuda"),
                                                  y[:2]),
        gc.index_copy(x, 1, gc.tensor([4, 0], device="cuda"), y[:, :2]),
        gc.masked_scatter(x, mask, y), gc.take_along_dim(x, x.argsort(1), 1),
        gc.einsum("ij,kj->ik", x, y), gc.cdist(x, y), gc.cross(x[:, :3], y[:, :3], dim=1),
        gc.lerp(x, y, w), gc.atan2(x, y), gc.logaddexp(x, y), gc.hypot(x, y),
        gc.copysign(x, y), gc.xlogy(x, y.abs()), gc.erfc(x), gc.erfinv(w), x % 0.7,
        gc.fmod(x, y), gc.nan_to_num(x), gc.aminmax(x, dim=0).max, sum(gc.var_mean(x, 1)),
        gc.diagonal(x, 1), gc.trace(x).reshape(1),
    ]
    loss = sum(t.sum() for t in terms)
    loss.backward()
    others = (gc.searchsorted(seq, x), gc.isclose(x, y), gc.count_nonzero(x, 1),
              gc.histc(x, 4, -1, 1), gc.meshgrid(seq, seq, indexing="ij"))
    assert standin.host_syncs() == 0, standin.sync_log()
    assert others[0].device.type == "cuda" and x.grad.device.type == "cuda"


@needs_torch
@pytest.mark.parametrize("decimals", [1, 2, -1, 3])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_round_with_decimals_is_pytorch_s(decimals, dtype):
    import torch

    x = [1.2345, 15.5, -2.55, 0.125, 2.675, 1e4 + 0.5]
    a = gc.round(gc.tensor(x, dtype=getattr(gc, dtype)), decimals=decimals)
    b = torch.round(torch.tensor(x, dtype=getattr(torch, dtype)), decimals=decimals)
    np.testing.assert_array_equal(host(a), b.numpy())
    t = gc.tensor(x, requires_grad=True)
    y = t.round(decimals=decimals)
    assert y.grad_fn.name() == "RoundBackward1"
    y.sum().backward()
    assert not host(t.grad).any()
    with pytest.raises(NotImplementedError, match="'Long'"):
        gc.round(gc.tensor([15]), decimals=-1)


# ---- found by tinygrad's op tests (dev/programs/tinygrad_ops.py) ---------------------
SHIFT_X = [1, -8, 5, 7, -1]
SHIFT_Y = [0, 1, 31, 32, 40]


def _shifts(m):
    x, y = m.tensor(SHIFT_X, dtype=m.int32), m.tensor(SHIFT_Y, dtype=m.int32)
    minus = m.tensor(-1, dtype=m.int32)
    small = m.tensor([1, 2], dtype=m.uint8)
    return [x << y, x >> y, x << minus, x >> minus, m.bitwise_left_shift(x, 2),
            m.bitwise_right_shift(x, 3), small << m.tensor([7, 8], dtype=m.uint8),
            3 << m.tensor([1, 2]), 100 >> m.tensor([1, 2]), m.tensor([True]) << 1,
            x.bitwise_left_shift(1)]


def test_shifts_are_pytorch_s():
    """``<<``/``>>`` and ``bitwise_left_shift``/``bitwise_right_shift``: shifts by a
    negative amount or the type's width or more give 0 (-1 for a negative value shifted
    right), bool promotes to int64, floats raise."""
    want = [[1, -16, -2147483648, 0, 0], [1, -4, 0, 0, -1], [0] * 5, [0, -1, 0, 0, -1],
            [4, -32, 20, 28, -4], [0, -1, 0, 0, -1], [128, 0], [6, 12], [50, 25], [2],
            [2, -16, 10, 14, -2]]
    got = _shifts(gc)
    for g, w in zip(got, want):
        assert g.tolist() == w
    assert [str(g.dtype).split(".")[1] for g in got[-5:]] == ["uint8", "int64", "int64",
                                                              "int64", "int32"]
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        gc.tensor([1.0]) << 1


@needs_torch
def test_shifts_against_pytorch():
    import torch

    for g, t in zip(_shifts(gc), _shifts(torch)):
        assert g.tolist() == t.tolist() and str(g.dtype)[9:] == str(t.dtype)[6:]


def test_expanding_to_zero_elements_passes_zero_gradient_back():
    x = gc.randn(4, 3, 1, 6, requires_grad=True)
    for shape in [(0, 1, 4, 3, 2, 6), (4, 3, 0, 6)]:
        (g,) = gc.autograd.grad(x.expand(shape).sum(), [x])
        assert g.shape == x.shape and not g.abs().sum().item()


@pytest.mark.parametrize("name, args", [
    ("aminmax", ()), ("argsort", ()), ("count_nonzero", ()), ("cumprod", ()),
    ("cumsum", ()), ("kthvalue", (1,)), ("log_softmax", ()), ("softmax", ()),
    ("sort", ()), ("std_mean", ()), ("topk", (1,)), ("var_mean", ()), ("unbind", ()),
    ("unsqueeze", ()), ("squeeze", ()), ("chunk", (2,)), ("repeat_interleave", (2,))])
def test_numpy_names_axis_and_keepdims_are_accepted(name, args):
    """PyTorch takes NumPy's ``axis`` for ``dim`` (and ``keepdims`` for ``keepdim``)."""
    x = gc.tensor(np.arange(12.0).reshape(3, 4))
    by_axis = getattr(gc, name)(x, *args, axis=0)
    by_dim = getattr(gc, name)(x, *args, dim=0)
    flat = (lambda r: [v.tolist() for v in r] if isinstance(r, tuple) else r.tolist())
    assert flat(by_axis) == flat(by_dim)
    for fn in (gc.cat, gc.stack, gc.concat):
        assert fn([x, x], axis=1).tolist() == fn([x, x], dim=1).tolist()
    assert gc.std_mean(x, axis=1, keepdims=True)[0].shape == (3, 1)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'dim'"):
        gc.cumsum(x)


def test_t_and_adjoint_are_transposes():
    x = gc.arange(6.0).reshape(2, 3).requires_grad_()
    assert x.t().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] == gc.t(x).tolist()
    assert x.adjoint().shape == (3, 2) and gc.arange(3.0).t().shape == (3,)
    assert gc.tensor(1.0).t().shape == ()
    (x.t() * gc.arange(6.0).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, "
                       "but self is 3D"):
        gc.ones(2, 3, 4).t()


def test_view_as_a_dtype_reinterprets_the_memory():
    """``view(dtype)`` reads the same bytes as another dtype (PyTorch's, not a cast): the
    last dimension scales with the element size, writes show through, never tracked."""
    x = gc.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True)
    bits = x.view(gc.int32)
    assert bits.tolist() == np.array([[1.0, 2.0], [0.5, -1.0]], np.float32).view(
        np.int32).tolist()
    assert not bits.requires_grad and bits.grad_fn is None
    assert x.view(gc.float16).shape == (2, 4) and x.view(gc.float64).shape == (2, 1)
    a = gc.zeros(3)
    a.view(gc.int32)[0] = 1065353216  # the bits of 1.0
    assert a.tolist() == [1.0, 0.0, 0.0]
    for bad, match in ((lambda: gc.ones(3, 2).t().view(gc.float16), "stride\\(-1\\) must be 1"),
                       (lambda: gc.ones(2, 3).view(gc.float64), "divisible by 2"),
                       (lambda: gc.tensor(1.0).view(gc.float16), "dim\\(\\) cannot be 0")):
        with pytest.raises(RuntimeError, match=match):
            bad()


@needs_torch
def test_logspace_and_bool_ranges_as_pytorch():
    import torch

    for args, kw in [((0, 2, 3), {}), ((-1, 1, 5), dict(base=2)), ((1, 2, 0), {})]:
        assert gc.logspace(*args, **kw).tolist() == torch.logspace(*args, **kw).tolist()
    assert gc.logspace(0, 3, 4, dtype=gc.int64).tolist() == [1, 10, 100, 1000]
    for op in ("linspace", "arange", "logspace"):
        args = (0, 3) if op == "arange" else (0, 3, 4)
        with pytest.raises(NotImplementedError, match=f'"{op}_cpu" not implemented for '
                                                      "'Bool'"):
            getattr(gc, op)(*args, dtype=gc.bool)


def test_t_in_place_and_float_bitwise_errors_as_pytorch():
    x = gc.arange(6.0).reshape(2, 3).requires_grad_()
    y = x * 1
    assert y.t_() is y and y.shape == (3, 2) and y.grad_fn.name() == "TransposeBackward1"
    (y * gc.arange(6.0).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    with pytest.raises(RuntimeError, match="t_\\(\\) expects a tensor with <= 2 dimensions"):
        gc.ones(2, 3, 4).t_()
    for fn, args in ((gc.bitwise_not, (gc.ones(2),)), (gc.bitwise_and, (gc.ones(2), 1)),
                     (gc.bitwise_or, (gc.ones(2), gc.ones(2)))):
        with pytest.raises(NotImplementedError, match=f'"{fn.__name__}_cpu" not '
                                                      "implemented for 'Float'"):
            fn(*args)
