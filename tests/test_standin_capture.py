"""The CuPy stand-in's streams, pools and stream capture: CUDA's semantics and CuPy 14's
refusals (cupy/cuda/stream.pyx, cupy/cuda/memory.pyx, cupy_backends/cuda/libs/cublas.pyx),
so that gradcore's capture path is checked in CI as a GPU would check it."""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc


def _capture(cp, body, pool=None, stream=None, mode=None):
    stream = stream or cp.cuda.Stream(non_blocking=True)
    pool = pool or cp.cuda.MemoryPool()
    # the capture stream ordered after the work already issued (the arrays the body reads
    # were made on the legacy stream): what a GPU needs, and the stand-in checks
    stream.wait_event(cp.cuda.get_current_stream().record())
    with stream, cp.cuda.using_allocator(pool.malloc):
        stream.begin_capture(mode)
        try:
            out = body()
        finally:
            graph = stream.end_capture()
    return graph, out, stream, pool


def test_capture_records_work_and_launch_replays_it(standin):
    cp = standin
    a = cp.asarray(np.arange(4, dtype=np.float32))

    def body():
        b = a * 2 + 1
        a[...] += 1
        return b, cp.asarray([a, b])  # (a stack of device arrays: device work too)

    graph, (b, both), stream, pool = _capture(cp, body)
    # nothing ran: the arrays are as they were, what the capture made holds garbage
    np.testing.assert_array_equal(a.get(), [0, 1, 2, 3])
    assert np.isnan(b.get()).all()
    graph.launch(stream)
    stream.synchronize()  # (the host reads on the legacy stream: the launch is on another)
    np.testing.assert_array_equal(b.get(), [1, 3, 5, 7])
    np.testing.assert_array_equal(a.get(), [1, 2, 3, 4])
    np.testing.assert_array_equal(both.get(), [[1, 2, 3, 4], [1, 3, 5, 7]])
    graph.launch()
    np.testing.assert_array_equal(b.get(), [3, 5, 7, 9])
    assert isinstance(graph, cp.cuda.graph.Graph)
    with pytest.raises(NotImplementedError, match="created via stream capture"):
        cp.cuda.graph.Graph()


def test_a_launch_allocates_nothing_and_the_pool_is_the_one_in_use(standin):
    cp = standin
    x = cp.ones((3, 3), dtype=np.float32)
    before = cp.get_default_memory_pool().n_allocations
    graph, out, stream, pool = _capture(cp, lambda: (x * 3).sum(axis=0) + x[0])
    assert pool.n_allocations == 3 and cp.get_default_memory_pool().n_allocations == before
    for _ in range(3):
        graph.launch(stream)
    assert pool.n_allocations == 3 and cp.get_default_memory_pool().n_allocations == before
    stream.synchronize()
    np.testing.assert_array_equal(out.get(), [10, 10, 10])


def test_kernels_launched_through_gradcore_are_recorded(standin):
    cp = standin
    m = gc.device("cuda").math
    g = cp.asarray(np.full(5, 2.0, dtype=np.float32))
    y = cp.asarray(np.linspace(-1, 1, 5).astype(np.float32))
    graph, out, stream, _ = _capture(cp, lambda: m.tanh_backward(g, y))
    assert np.isnan(out.get()).all()
    graph.launch(stream)
    stream.synchronize()
    np.testing.assert_allclose(out.get(), 2 * (1 - y.get() ** 2), rtol=1e-6)


def test_host_transfers_are_refused_as_cupy_does(standin):
    cp = standin
    a = cp.zeros(3, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        for read in (a.get, a.item, lambda: float(a[0]), a.tolist, lambda: cp.asnumpy(a),
                     lambda: cp.nonzero(a)):
            with pytest.raises(RuntimeError, match="capturing, so D2H transfers are "
                                                   "disallowed"):
                read()
        # (a 0-d array is filled by a kernel taking the value, no transfer: allowed,
        # as in CuPy's _array_default)
        cp.asarray(2.0)
        for write in (lambda: cp.asarray(np.ones(3)), lambda: cp.array([1, 2])):
            with pytest.raises(RuntimeError, match="capturing, so H2D transfers are "
                                                   "disallowed"):
                write()
        assert s.is_capturing()  # CuPy refuses these before calling CUDA: still valid
        s.end_capture()
    assert a.get().tolist() == [0, 0, 0]  # and after it, reads are fine


def test_cublas_is_refused_as_cupy_does_but_integer_products_are_not(standin):
    cp = standin
    a = cp.ones((2, 2), dtype=np.float32)
    i = cp.ones((2, 2), dtype=np.int64)
    s = cp.cuda.Stream(non_blocking=True)
    s.wait_event(cp.cuda.get_current_stream().record())
    with s:
        s.begin_capture()
        for product in (lambda: a @ a, lambda: cp.matmul(a, a), lambda: cp.dot(a, a),
                        lambda: a.dot(a), lambda: cp.tensordot(a, a),
                        lambda: cp.einsum("ij,jk->ik", a, a)):
            with pytest.raises(NotImplementedError, match="cuBLAS API during stream "
                                                          "capture"):
                product()
        out = i @ i  # CuPy's own kernel for integers
        graph = s.end_capture()
    graph.launch(s)
    s.synchronize()
    assert out.get().tolist() == [[2, 2], [2, 2]]
    np.testing.assert_array_equal((a @ a).get(), [[2, 2], [2, 2]])  # after: cuBLAS again


def test_synchronizing_invalidates_the_capture(standin):
    cp = standin
    for sync in (lambda s: s.synchronize(), lambda s: cp.cuda.Device(0).synchronize(),
                 lambda s: cp.cuda.runtime.deviceSynchronize()):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            s.begin_capture()
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError,
                               match="cudaErrorStreamCaptureUnsupported"):
                sync(s)
            with pytest.raises(RuntimeError, match="invalidated the capture"):
                s.is_capturing()
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError,
                               match="cudaErrorStreamCaptureInvalidated"):
                s.end_capture()
        assert not s.is_capturing()


def test_streams_capture_rules(standin):
    cp = standin
    with pytest.raises(RuntimeError, match="cannot capture on the default"):
        cp.cuda.Stream.null.begin_capture()
    # a blocking stream captures, and the legacy stream's work would depend on it
    blocking = cp.cuda.Stream()
    a = cp.zeros(2, dtype=np.float32)
    with blocking:
        blocking.begin_capture()
        with cp.cuda.Stream.null, pytest.raises(cp.cuda.runtime.CUDARuntimeError,
                                                match="cudaErrorStreamCaptureImplicit"):
            a + 1
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
            blocking.end_capture()
    # a non-blocking one does not: work on another stream runs as it comes
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        with cp.cuda.Stream.null:
            b = a + 1
        with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="IllegalState"):
            s.begin_capture()
        s.end_capture()
    assert b.get().tolist() == [1, 1] and cp.cuda.get_current_stream() == cp.cuda.Stream.null
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="IllegalState"):
        s.end_capture()
    assert s.is_non_blocking and not blocking.is_non_blocking


def test_pool_growth_in_the_global_mode_is_refused(standin):
    cp = standin
    rt = cp.cuda.runtime
    a = cp.zeros(64, dtype=np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s, cp.cuda.using_allocator(cp.cuda.MemoryPool().malloc):
        s.begin_capture(rt.streamCaptureModeGlobal)
        with pytest.raises(rt.CUDARuntimeError, match="StreamCaptureUnsupported"):
            a + 1  # the new pool must take memory from the device: cudaMalloc
        with pytest.raises(rt.CUDARuntimeError, match="StreamCaptureInvalidated"):
            s.end_capture()
    # a pool that already holds a free block of the size serves it without cudaMalloc
    pool = cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc):
        del_me = cp.empty(64, dtype=np.float32)
    del del_me
    assert pool.n_free_blocks() == 1
    graph, out, s, _ = _capture(cp, lambda: a + 1, pool=pool,
                                mode=rt.streamCaptureModeGlobal)
    graph.launch(s)
    s.synchronize()
    assert out.get().tolist() == [1] * 64


def test_memory_reused_after_the_capture_is_caught(standin):
    cp = standin
    a = cp.zeros(16, dtype=np.float32)
    default = cp.get_default_memory_pool()
    s = cp.cuda.Stream(non_blocking=True)
    s.wait_event(cp.cuda.get_current_stream().record())
    with s:  # captured from the default pool: its temporaries go back to it
        s.begin_capture()
        out = (a + 1) * 2
        graph = s.end_capture()
    graph.launch(s)
    s.synchronize()
    assert out.get().tolist() == [2] * 16
    filler = [cp.empty(16, dtype=np.float32) for _ in range(default.n_free_blocks() + 1)]
    with pytest.raises(RuntimeError, match="handed out again by its pool"):
        graph.launch(s)
    del filler


def test_work_on_two_streams_must_be_ordered_as_on_a_gpu(standin):
    """The stand-in runs every stream's work at once, so it checks the ordering a GPU
    needs instead: work that reads what another stream wrote (or writes what another
    read or wrote) without an event waited on or a synchronization in between raises
    (on a GPU the two may run at once: silently wrong values)."""
    cp = standin
    from cupy_standin._graph import StreamRace  # noqa: PLC0415

    a = cp.zeros(8, dtype=np.float32)
    s1 = cp.cuda.Stream(non_blocking=True)
    s2 = cp.cuda.Stream(non_blocking=True)
    s1.wait_event(cp.cuda.get_current_stream().record())
    with s1:
        a += 1                      # written on s1
    with s2, pytest.raises(StreamRace, match="reads memory .* not ordered after"):
        a.copy()                    # read on s2, s2 not waiting for s1
    s2.wait_event(s1.record())
    with s2:
        b = a.copy()                # ordered: fine
    with s1, pytest.raises(StreamRace, match="writes memory"):
        a[...] = 3                  # s1 writes what s2 read, not waiting for s2
    with pytest.raises(StreamRace):
        b.get()                     # the legacy stream reads what s2 wrote
    s2.synchronize()                # the host waited: later work is ordered after
    assert b.get().tolist() == [1.0] * 8
    s1.wait_event(s2.record())
    with s1:
        a[...] = 3
    cp.cuda.runtime.deviceSynchronize()
    assert a.get().tolist() == [3.0] * 8
