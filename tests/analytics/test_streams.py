"""Uploads and device work beside a model's stream (analytics._streams)."""

import threading

import numpy as np
import pytest
import torch

from analytics._streams import own_stream, upload


def test_off_cuda_there_is_no_stream_and_an_upload_is_the_array():
    array = np.arange(24, dtype=np.uint8).reshape(2, 2, 2, 3)
    assert own_stream(torch.device("cpu")) is None
    tensor = upload(array, torch.device("cpu"))
    assert tensor.device.type == "cpu" and tensor.dtype == torch.uint8
    np.testing.assert_array_equal(tensor.numpy(), array)


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.may_skip
@CUDA
def test_each_thread_has_its_own_stream_and_none_is_the_models():
    device = torch.device("cuda")
    mine = own_stream(device)
    assert mine is own_stream(torch.device("cuda", torch.cuda.current_device()))  # made once per thread
    assert mine != torch.cuda.current_stream() and mine != torch.cuda.default_stream()
    other = []
    thread = threading.Thread(target=lambda: other.append(own_stream(device)))
    thread.start()
    thread.join()
    assert other[0] != mine


@pytest.mark.may_skip
@CUDA
def test_an_upload_behind_queued_work_is_what_the_next_operation_reads():
    device = torch.device("cuda")
    busy = torch.randn(4096, 4096, device=device)
    for _ in range(20):  # work queued on the current stream while the copy runs on its own
        busy = busy @ busy / 64
    arrays = [torch.randint(0, 256, (64, 32, 32, 3), dtype=torch.uint8, pin_memory=True).numpy() for _ in range(4)]
    sums = [upload(array, device).sum(dtype=torch.int64) for array in arrays]  # each read on the current stream
    del busy
    assert [int(s) for s in sums] == [int(array.sum(dtype=np.int64)) for array in arrays]
