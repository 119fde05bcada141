#!/usr/bin/env python3
"""The PyTorch worker's input copy to the GPU (docs/torch-runner.md): a 1x3x224x224 float32 input copied to the device
from a MAP_SHARED /dev/shm mapping (as the worker's shared memory is) against ordinary memory, through a pinned
staging buffer, and from the mapping registered with cudaHostRegister. Needs torch with CUDA and a GPU:
    python3 bench/torch_shm_h2d.py
"""
import mmap, os, time, statistics
import numpy as np
import torch

dev = torch.device("cuda")
shape = (1, 3, 224, 224)
nbytes = int(np.prod(shape)) * 4
plain = np.random.default_rng(1).random(shape, dtype=np.float32)
fd = os.open("/dev/shm/parity_h2d_test", os.O_CREAT | os.O_RDWR, 0o600)
os.ftruncate(fd, nbytes)
region = mmap.mmap(fd, nbytes, mmap.MAP_SHARED)
shm = np.frombuffer(region, dtype=np.float32).reshape(shape)
shm[...] = plain
target = torch.empty(shape, device=dev)
pinned = torch.empty(shape, pin_memory=True)

def timeit(name, fn, n=500):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    print(f"{name:55s} median {statistics.median(times)*1e6:8.1f} us  min {min(times)*1e6:8.1f} us", flush=True)

host_plain = torch.from_numpy(plain)
host_shm = torch.from_numpy(shm)
timeit("from_numpy(plain).to(dev)", lambda: torch.from_numpy(plain).to(dev))
timeit("target.copy_(plain tensor)", lambda: target.copy_(host_plain))
timeit("target.copy_(shm tensor)", lambda: target.copy_(host_shm))
def staged():
    pinned.copy_(host_shm)
    target.copy_(pinned, non_blocking=True)
timeit("pinned.copy_(shm); target.copy_(pinned, non_blocking)", staged)
cudart = torch.cuda.cudart()
r = cudart.cudaHostRegister(host_shm.data_ptr(), nbytes, 0)
print("cudaHostRegister:", r, flush=True)
timeit("target.copy_(registered shm tensor)", lambda: target.copy_(host_shm))
timeit("target.copy_(registered shm, non_blocking)", lambda: target.copy_(host_shm, non_blocking=True))
cudart.cudaHostUnregister(host_shm.data_ptr())
os.unlink("/dev/shm/parity_h2d_test")

