// tests/stencil/gpu_busy.cu: every thread slot of the current GPU held for
// `ms` milliseconds by a kernel queued on `stream` (a cudaStream_t); returns
// the cudaError_t of the launch (0: queued).
#pragma once

namespace stencil_check {
int occupy_gpu(double ms, void* stream);
}
