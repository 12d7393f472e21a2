// gradcore_rows.cuh: the kernels that are not one expression per element, hand-written.
// Included by the generated kernels/pointwise_backward.cu, whose extern "C" entry
// points (one per dtype) call these templates; their parameter lists are declared in
// gradcore/kernels_cuda.py (ROW_KERNELS) and their NumPy twins live in
// gradcore/fused_rows.py. See docs/kernels.md.
//
// Layout: a row is `cols` contiguous elements of a C-contiguous (rows, cols) array (the
// last axis). The row kernels give each row to one block (grid-stride over rows) and
// reduce across the block's threads in shared memory; blockDim.x must be at most
// GRADCORE_MAX_BLOCK. Sums run in the compute type C (float for float16).
#pragma once

#include "gradcore_cuda.cuh"

#define GRADCORE_MAX_BLOCK 256

namespace gradcore {

// The reduction with `op` of every thread's `v` over the block, returned to all of
// them. Every thread of the block must call it (it synchronizes). A tree over the
// shared buffer, for any blockDim.x up to GRADCORE_MAX_BLOCK.
template <typename C, typename Op>
__device__ __forceinline__ C block_reduce(C v, C* buf, Op op) {
    const unsigned int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    unsigned int half = 1;
    while (half * 2 < blockDim.x) half *= 2;
    for (; half > 0; half /= 2) {
        if (t < half && t + half < blockDim.x) buf[t] = op(buf[t], buf[t + half]);
        __syncthreads();
    }
    const C total = buf[0];
    __syncthreads();  // before the buffer is reused
    return total;
}

struct add_op {
    template <typename C> __device__ __forceinline__ C operator()(C a, C b) const {
        return a + b;
    }
};
struct max_op {  // NaN if either is NaN
    template <typename C> __device__ __forceinline__ C operator()(C a, C b) const {
        return maximum(a, b);
    }
};

template <typename C>
__device__ __forceinline__ C block_sum(C v, C* buf) { return block_reduce(v, buf, add_op()); }
template <typename C>
__device__ __forceinline__ C block_max(C v, C* buf) { return block_reduce(v, buf, max_op()); }

// A row's maximum mx and sum of exp(x - mx), to every thread of the block (the start of
// a softmax without overflow).
template <typename T, typename C>
__device__ __forceinline__ void row_max_and_exp_sum(const T* __restrict__ row, long long cols,
                                                    C* buf, C& mx, C& s) {
    C m = -infinity(C(0));
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = maximum(m, load(row[j]));
    mx = block_max(m, buf);
    C acc = C(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) acc += exp(load(row[j]) - mx);
    s = block_sum(acc, buf);
}

// softmax (log_ = 0) or log_softmax (log_ = 1) along the rows, a block per row, in the
// CPU's operations: with m the row's maximum, exp(x - m) / sum(exp(x - m)), or
// (x - m) - log(sum(exp(x - m))).
template <typename T, typename C>
__device__ __forceinline__ void softmax_forward_rows(
        const T* __restrict__ x, long long log_, T* __restrict__ y, long long rows,
        long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        C mx, s;
        row_max_and_exp_sum(x + base, cols, buf, mx, s);
        const C log_s = log(s);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const C shifted = load(x[base + j]) - mx;
            y[base + j] = store<T>(log_ ? shifted - log_s : exp(shifted) / s);
        }
    }
}

// cross_entropy's forward for class targets, a block per row: the log-probabilities
// logp = (x - max) - log(sum(exp(x - max))) (log_softmax's operations), and for the
// loss the row's weight wt (weight[t], or 1; 0 for an ignored target), its loss
// -(logp[t] * wt) (0 when ignored) and the target with ignored ones made 0 (tsafe).
// The loss reads logp[t] as stored, rounded to T, as nll_loss reads log_softmax's
// output. A target out of range gives a NaN loss and is kept in tsafe as it is, where
// the caller's range check finds it (backend.check_range: raised at the next read);
// nothing reads memory at it.
template <typename T, typename C>
__device__ __forceinline__ void softmax_xent_forward(
        const T* __restrict__ x, const long long* __restrict__ target,
        const C* __restrict__ weight, long long has_weight, long long ignore_index,
        T* __restrict__ logp, C* __restrict__ loss, C* __restrict__ wt,
        long long* __restrict__ tsafe, long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        C mx, s;
        row_max_and_exp_sum(x + base, cols, buf, mx, s);
        const C log_sum = log(s);
        const long long t = target[r];
        const bool valid = t != ignore_index;
        const bool in_range = t >= 0 && t < cols;
        const C w = !valid ? C(0) : !has_weight ? C(1) : in_range ? weight[t] : not_a_number(C(0));
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const T stored = store<T>(load(x[base + j]) - mx - log_sum);
            logp[base + j] = stored;
            if (valid && j == t) loss[r] = -(load(stored) * w);
        }
        if (threadIdx.x == 0) {
            wt[r] = w;
            tsafe[r] = valid ? t : 0;
            if (!valid) loss[r] = C(0);
            else if (!in_range) loss[r] = not_a_number(C(0));
        }
    }
}

// cross_entropy's reduction of the per-row losses, a block per row of `cols` losses (a
// batch): out = the sum of `loss` (mode 1), or that divided by total = the sum of the
// weights `wt` (mode 2, the mean; mode 0 writes no out); the gradient's coefficients
// coef = -wt (-wt / total for the mean, 0 where total is 0); and the least and greatest
// target of `tsafe` into bounds (the caller's range check, read at the next read from the
// device). One launch where the array calls take six.
struct least_op {
    __device__ __forceinline__ long long operator()(long long a, long long b) const {
        return b < a ? b : a;
    }
};
struct greatest_op {
    __device__ __forceinline__ long long operator()(long long a, long long b) const {
        return b > a ? b : a;
    }
};

// The least and greatest of a row's `cols` indices (`t`), to every thread of the block.
__device__ __forceinline__ void row_bounds(const long long* __restrict__ t, long long cols,
                                           long long* ibuf, long long& lo, long long& hi) {
    lo = 0x7fffffffffffffffLL;
    hi = -0x7fffffffffffffffLL - 1;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        const long long v = t[j];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    lo = block_reduce(lo, ibuf, least_op());
    hi = block_reduce(hi, ibuf, greatest_op());
}

// An index array's least and greatest element, a block per row of `cols` (the range check
// of an op with tensor indices: one launch where a min and a max are two).
template <typename T, typename C>
__device__ __forceinline__ void index_bounds(const long long* __restrict__ idx,
                                             long long* __restrict__ bounds, long long rows,
                                             long long cols) {
    __shared__ long long ibuf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        long long lo, hi;
        row_bounds(idx + r * cols, cols, ibuf, lo, hi);
        if (threadIdx.x == 0) {
            bounds[2 * r] = lo;
            bounds[2 * r + 1] = hi;
        }
    }
}

// The end of cross_entropy's reduction over `n` rows, every thread of the block calling
// it: its share `s` of the losses' sum and `w` of the weights', the targets' least and
// greatest (`lo`, `hi`, already the block's) -> out (the sum, or the mean for mode 2;
// none for mode 0), the coefficients coef = -wt (-wt / total for the mean, 0 where the
// total is 0; each thread those of the rows j = threadIdx.x + k * blockDim.x) and bounds.
template <typename C>
__device__ __forceinline__ void nll_finish(C s, C w, long long lo, long long hi,
                                           const C* __restrict__ wt, long long n,
                                           long long mode, C* __restrict__ out,
                                           C* __restrict__ coef,
                                           long long* __restrict__ bounds, C* buf) {
    s = block_sum(s, buf);
    const C total = mode == 2 ? block_sum(w, buf) : C(1);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
        const C neg = -wt[j];
        coef[j] = mode != 2 ? neg : total != C(0) ? neg / total : C(0);
    }
    if (threadIdx.x == 0) {
        if (mode != 0) out[0] = mode == 2 ? s / total : s;
        bounds[0] = lo;
        bounds[1] = hi;
    }
}

template <typename T, typename C>
__device__ __forceinline__ void nll_reduce(
        const C* __restrict__ loss, const C* __restrict__ wt,
        const long long* __restrict__ tsafe, long long mode, C* __restrict__ out,
        C* __restrict__ coef, long long* __restrict__ bounds, long long rows,
        long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    __shared__ long long ibuf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        C s = C(0), w = C(0);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            s += loss[base + j];
            w += wt[base + j];
        }
        long long lo, hi;
        row_bounds(tsafe + base, cols, ibuf, lo, hi);
        nll_finish(s, w, lo, hi, wt + base, cols, mode, out + r, coef + base,
                   bounds + 2 * r, buf);
    }
}

// cross_entropy's forward and reduction in one launch for a small batch of narrow rows
// (the caller chooses: a few thousand elements): one block, a thread per row doing what
// softmax_xent_forward's block does for it (the row's maximum, sum of exponentials,
// log-probabilities, weight, loss and safe target), then nll_reduce's sums, coefficients
// and bounds over the rows each thread made. Two launches' work in one where launches,
// not the device, cost the time.
template <typename T, typename C>
__device__ __forceinline__ void softmax_xent_small(
        const T* __restrict__ x, const long long* __restrict__ target,
        const C* __restrict__ weight, long long has_weight, long long ignore_index,
        long long mode, T* __restrict__ logp, C* __restrict__ loss, C* __restrict__ wt,
        long long* __restrict__ tsafe, C* __restrict__ out, C* __restrict__ coef,
        long long* __restrict__ bounds, long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    __shared__ long long ibuf[GRADCORE_MAX_BLOCK];
    if (blockIdx.x != 0) return;
    C s_loss = C(0), s_wt = C(0);
    long long lo = 0x7fffffffffffffffLL, hi = -0x7fffffffffffffffLL - 1;
    for (long long r = threadIdx.x; r < rows; r += blockDim.x) {
        const long long base = r * cols;
        C mx = -infinity(C(0));
        for (long long j = 0; j < cols; ++j) mx = maximum(mx, load(x[base + j]));
        C s = C(0);
        for (long long j = 0; j < cols; ++j) s += exp(load(x[base + j]) - mx);
        const C log_sum = log(s);
        const long long t = target[r];
        const bool valid = t != ignore_index;
        const bool in_range = t >= 0 && t < cols;
        const C w = !valid ? C(0) : !has_weight ? C(1) : in_range ? weight[t] : not_a_number(C(0));
        C row_loss = !valid ? C(0) : not_a_number(C(0));
        for (long long j = 0; j < cols; ++j) {
            const T stored = store<T>(load(x[base + j]) - mx - log_sum);
            logp[base + j] = stored;
            if (valid && j == t) row_loss = -(load(stored) * w);
        }
        loss[r] = row_loss;
        wt[r] = w;
        const long long ts = valid ? t : 0;
        tsafe[r] = ts;
        s_loss += row_loss;
        s_wt += w;
        lo = ts < lo ? ts : lo;
        hi = ts > hi ? ts : hi;
    }
    lo = block_reduce(lo, ibuf, least_op());
    hi = block_reduce(hi, ibuf, greatest_op());
    // (each thread's coefficients are of the rows it made above: no wait between)
    nll_finish(s_loss, s_wt, lo, hi, wt, rows, mode, out, coef, bounds, buf);
}

// The backward of a softmax-like op along the rows, from a row sum: for each row,
// s = sum over the row of F::term(g, y), then out = F::out(g, y, s).
template <typename T, typename C, typename F>
__device__ __forceinline__ void row_backward(
        const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ out,
        long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        C acc = C(0);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            acc += F::term(load(g[base + j]), load(y[base + j]));
        const C s = block_sum(acc, buf);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            out[base + j] = store<T>(F::out(load(g[base + j]), load(y[base + j]), s));
    }
}

// softmax: out = g * y - y * sum(g * y) (y the softmax output)
struct softmax_terms {
    template <typename C> __device__ __forceinline__ static C term(C g, C y) { return g * y; }
    template <typename C> __device__ __forceinline__ static C out(C g, C y, C s) {
        return g * y - y * s;
    }
};

// log_softmax: out = g - exp(y) * sum(g) (y the log-probabilities)
struct log_softmax_terms {
    template <typename C> __device__ __forceinline__ static C term(C g, C) { return g; }
    template <typename C> __device__ __forceinline__ static C out(C g, C y, C s) {
        return g - exp(y) * s;
    }
};

template <typename T, typename C>
__device__ __forceinline__ void softmax_backward_rows(
        const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ out,
        long long rows, long long cols) {
    row_backward<T, C, softmax_terms>(g, y, out, rows, cols);
}

template <typename T, typename C>
__device__ __forceinline__ void log_softmax_backward_rows(
        const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ out,
        long long rows, long long cols) {
    row_backward<T, C, log_softmax_terms>(g, y, out, rows, cols);
}

// softmax cross-entropy backward, from the log-probabilities `logp` of the forward: with
// v = g[r * g_stride] * coef[r] (coef: -weight[target] / total weight, 0 where ignored),
// out = (j == target[r] ? v : 0) - exp(logp) * v: the log_softmax backward of the
// one-hot gradient of nll_loss, in the same operations, without forming the one-hot.
// One thread per element (no reduction: the one-hot row sums to v).
template <typename T, typename C>
__device__ __forceinline__ void softmax_xent_backward(
        const T* __restrict__ logp, const long long* __restrict__ target,
        const T* __restrict__ g, long long g_stride, const T* __restrict__ coef,
        T* __restrict__ out, long long rows, long long cols) {
    const long long n = rows * cols;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long r = i / cols;
        const C v = load(g[r * g_stride]) * load(coef[r]);
        const C hot = (i - r * cols == target[r]) ? v : C(0);
        out[i] = store<T>(hot - exp(load(logp[i])) * v);
    }
}

// The gradient of a row-broadcast operand of a product, in one pass: out[k] = sum over
// r of g[r, k] * x[r, k]. A block takes w = 32 adjacent columns (coalesced reads; fewer
// for a block under 32 threads) and splits the rows among blockDim.x / w lanes, then
// adds the lanes' sums in shared memory, in lane order.
template <typename T, typename C>
__device__ __forceinline__ void mul_sum_rows(
        const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ out,
        long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    const unsigned int w = blockDim.x < 32 ? blockDim.x : 32;
    const unsigned int lanes = blockDim.x / w;
    const unsigned int c = threadIdx.x % w, lane = threadIdx.x / w;
    for (long long tile = blockIdx.x; tile * w < cols; tile += gridDim.x) {
        const long long k = tile * w + c;
        C acc = C(0);
        if (k < cols && lane < lanes)
            for (long long r = lane; r < rows; r += lanes)
                acc += load(g[r * cols + k]) * load(x[r * cols + k]);
        buf[threadIdx.x] = acc;
        __syncthreads();
        if (lane == 0 && k < cols) {
            C total = acc;
            for (unsigned int l = 1; l < lanes; ++l) total += buf[l * w + c];
            out[k] = store<T>(total);
        }
        __syncthreads();
    }
}

// layer_norm over rows of `cols` (the normalized trailing dimensions), a block per row,
// in the CPU's operations: mean = sum(x) * inv_n, var = sum((x - mean)^2) * inv_n,
// rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * w + b (w, b when has_w, has_b).
template <typename T, typename C>
__device__ __forceinline__ void layer_norm_forward_rows(
        const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
        long long has_w, long long has_b, C eps, C inv_n, T* __restrict__ y,
        C* __restrict__ mean, C* __restrict__ rstd, long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        C acc = C(0);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) acc += load(x[base + j]);
        const C mu = block_sum(acc, buf) * inv_n;
        acc = C(0);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const C xc = load(x[base + j]) - mu;
            acc += xc * xc;
        }
        const C rs = C(1) / sqrt(block_sum(acc, buf) * inv_n + eps);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            C v = (load(x[base + j]) - mu) * rs;
            if (has_w) v = v * load(w[j]);
            if (has_b) v = v + load(b[j]);
            y[base + j] = store<T>(v);
        }
        if (threadIdx.x == 0) {
            mean[r] = mu;
            rstd[r] = rs;
        }
    }
}

// layer_norm's input gradient, a block per row: with xhat = (x - mean) * rstd and
// gh = g * w (or g), dx = (gh - sum(gh) * inv_n - xhat * (sum(gh * xhat) * inv_n)) * rstd.
template <typename T, typename C>
__device__ __forceinline__ void layer_norm_backward_rows(
        const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ w,
        long long has_w, const C* __restrict__ mean, const C* __restrict__ rstd, C inv_n,
        T* __restrict__ dx, long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        const C mu = mean[r], rs = rstd[r];
        C acc_a = C(0), acc_b = C(0);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const C gh = has_w ? load(g[base + j]) * load(w[j]) : load(g[base + j]);
            acc_a += gh;
            acc_b += gh * ((load(x[base + j]) - mu) * rs);
        }
        const C a = block_sum(acc_a, buf) * inv_n;
        const C bb = block_sum(acc_b, buf) * inv_n;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const C gh = has_w ? load(g[base + j]) * load(w[j]) : load(g[base + j]);
            const C xhat = (load(x[base + j]) - mu) * rs;
            dx[base + j] = store<T>((gh - a - xhat * bb) * rs);
        }
    }
}

// layer_norm's weight and bias gradients: column sums over the rows of g * xhat and of
// g, both in one pass (the lanes of mul_sum_rows).
template <typename T, typename C>
__device__ __forceinline__ void layer_norm_param_grads(
        const T* __restrict__ g, const T* __restrict__ x, const C* __restrict__ mean,
        const C* __restrict__ rstd, long long has_w, long long has_b, T* __restrict__ dw,
        T* __restrict__ db, long long rows, long long cols) {
    __shared__ C buf_w[GRADCORE_MAX_BLOCK];
    __shared__ C buf_b[GRADCORE_MAX_BLOCK];
    const unsigned int w = blockDim.x < 32 ? blockDim.x : 32;
    const unsigned int lanes = blockDim.x / w;
    const unsigned int c = threadIdx.x % w, lane = threadIdx.x / w;
    for (long long tile = blockIdx.x; tile * w < cols; tile += gridDim.x) {
        const long long k = tile * w + c;
        C acc_w = C(0), acc_b = C(0);
        if (k < cols && lane < lanes)
            for (long long r = lane; r < rows; r += lanes) {
                const C gv = load(g[r * cols + k]);
                acc_w += gv * ((load(x[r * cols + k]) - mean[r]) * rstd[r]);
                acc_b += gv;
            }
        buf_w[threadIdx.x] = acc_w;
        buf_b[threadIdx.x] = acc_b;
        __syncthreads();
        if (lane == 0 && k < cols) {
            C tw = acc_w, tb = acc_b;
            for (unsigned int l = 1; l < lanes; ++l) {
                tw += buf_w[l * w + c];
                tb += buf_b[l * w + c];
            }
            if (has_w) dw[k] = store<T>(tw);
            if (has_b) db[k] = store<T>(tb);
        }
        __syncthreads();
    }
}

// Batch norm's layout: x as (outer, rows, cols), C-contiguous, each of the `rows` channels
// normalized over its outer * cols elements (the batch and the spatial positions), a
// block per channel; element j of channel r is x[(j / cols * rows + r) * cols + j % cols].
__device__ __forceinline__ long long channel_at(long long j, long long r, long long rows,
                                                long long cols) {
    const long long o = j / cols;
    return (o * rows + r) * cols + (j - o * cols);
}

// batch norm's forward, in layer_norm_forward_rows's operations over a channel's
// elements; the weight and bias (one per channel) in the compute type C.
template <typename T, typename C>
__device__ __forceinline__ void norm_forward_channels(
        const T* __restrict__ x, const C* __restrict__ w, const C* __restrict__ b,
        long long has_w, long long has_b, C eps, C inv_n, T* __restrict__ y,
        C* __restrict__ mean, C* __restrict__ rstd, long long outer, long long rows,
        long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    const long long n = outer * cols;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        C acc = C(0);
        for (long long j = threadIdx.x; j < n; j += blockDim.x)
            acc += load(x[channel_at(j, r, rows, cols)]);
        const C mu = block_sum(acc, buf) * inv_n;
        acc = C(0);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            const C xc = load(x[channel_at(j, r, rows, cols)]) - mu;
            acc += xc * xc;
        }
        const C rs = C(1) / sqrt(block_sum(acc, buf) * inv_n + eps);
        const C wr = has_w ? w[r] : C(1), br = has_b ? b[r] : C(0);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            const long long k = channel_at(j, r, rows, cols);
            C v = (load(x[k]) - mu) * rs;
            if (has_w) v = v * wr;
            if (has_b) v = v + br;
            y[k] = store<T>(v);
        }
        if (threadIdx.x == 0) {
            mean[r] = mu;
            rstd[r] = rs;
        }
    }
}

// batch norm's gradients, a block per channel: with xhat = (x - mean) * rstd, the sums
// sg = sum(g) and sgx = sum(g * xhat) over the channel give the bias's and weight's
// gradients (when need_params) and the input's (when need_x),
// dx = (g * w - sg * w * inv_n - xhat * (sgx * w * inv_n)) * rstd.
template <typename T, typename C>
__device__ __forceinline__ void norm_backward_channels(
        const T* __restrict__ g, const T* __restrict__ x, const C* __restrict__ w,
        long long has_w, const C* __restrict__ mean, const C* __restrict__ rstd, C inv_n,
        long long need_x, long long need_params, T* __restrict__ dx, C* __restrict__ dw,
        C* __restrict__ db, long long outer, long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    const long long n = outer * cols;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const C mu = mean[r], rs = rstd[r], wr = has_w ? w[r] : C(1);
        C acc_g = C(0), acc_gx = C(0);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            const long long k = channel_at(j, r, rows, cols);
            const C gv = load(g[k]);
            acc_g += gv;
            acc_gx += gv * ((load(x[k]) - mu) * rs);
        }
        const C sg = block_sum(acc_g, buf), sgx = block_sum(acc_gx, buf);
        if (need_params && threadIdx.x == 0) {
            dw[r] = sgx;
            db[r] = sg;
        }
        if (need_x) {
            const C a = sg * wr * inv_n, bb = sgx * wr * inv_n;
            for (long long j = threadIdx.x; j < n; j += blockDim.x) {
                const long long k = channel_at(j, r, rows, cols);
                const C xhat = (load(x[k]) - mu) * rs;
                dx[k] = store<T>((load(g[k]) * wr - a - xhat * bb) * rs);
            }
        }
    }
}

// scaled_dot_product_attention's weights, a block per row of `cols` keys: the score of
// key j is s * scale (+ bias, of the scores' shape, when has_bias), or -inf where causal
// (n_q > 0: row r is query r % n_q, which sees the keys j <= r % n_q); then softmax's
// operations, except that a row left with no key (-inf all along) gives zeros (PyTorch's
// _safe_softmax): its maximum is taken as 0, its sum of exponentials (0) as 1.
template <typename T, typename C>
__device__ __forceinline__ C attention_score(const T* __restrict__ s, const T* __restrict__ bias,
                                             long long has_bias, C scale, long long last,
                                             long long base, long long j) {
    if (j > last) return -infinity(C(0));
    const C v = load(s[base + j]) * scale;
    return has_bias ? v + load(bias[base + j]) : v;
}

template <typename T, typename C>
__device__ __forceinline__ void attention_softmax_rows(
        const T* __restrict__ s, const T* __restrict__ bias, long long has_bias, C scale,
        long long n_q, T* __restrict__ y, long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        const long long last = n_q ? r % n_q : cols;  // the last key the query sees
        C m = -infinity(C(0));
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            m = maximum(m, attention_score(s, bias, has_bias, scale, last, base, j));
        C mx = block_max(m, buf);
        if (mx == -infinity(C(0))) mx = C(0);
        C acc = C(0);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            acc += exp(attention_score(s, bias, has_bias, scale, last, base, j) - mx);
        C total = block_sum(acc, buf);
        if (total == C(0)) total = C(1);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            y[base + j] = store<T>(
                exp(attention_score(s, bias, has_bias, scale, last, base, j) - mx) / total);
    }
}

// Its gradients, a block per row: d = g * y - y * sum(g * y) (softmax's backward; 0 in
// a row with no key, whose y is 0), out = d * scale (the scores') and, when need_d, d
// itself in the compute type (which the bias's gradient sums).
template <typename T, typename C>
__device__ __forceinline__ void attention_softmax_backward_rows(
        const T* __restrict__ g, const T* __restrict__ y, C scale, long long need_d,
        T* __restrict__ out, C* __restrict__ d, long long rows, long long cols) {
    __shared__ C buf[GRADCORE_MAX_BLOCK];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long base = r * cols;
        C acc = C(0);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            acc += load(g[base + j]) * load(y[base + j]);
        const C sum = block_sum(acc, buf);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const C yj = load(y[base + j]);
            const C dj = load(g[base + j]) * yj - yj * sum;
            out[base + j] = store<T>(dj * scale);
            if (need_d) d[base + j] = dj;
        }
    }
}

}  // namespace gradcore
