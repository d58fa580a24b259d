// dtmpi-scope's results as dtmpi-measure reads them (no MPI, no CUDA): the
// file it leaves in the cache directory, and the model terms it measured --
// the pinned copies and the GPU to GPU copy, from its naive/ rows, which time
// exactly what dtmpi-measure would: cudaMemcpyAsync on the default stream +
// cudaStreamSynchronize by the wall clock (the caller waits for all of it, so
// the model needs that time, not the link's alone).
#pragma once
#include <string>

#include "transport/model.hpp"

namespace dtmpi::scope {

// scope-<host>-<gpu>.json (the model file's name, another prefix)
std::string results_file_name(const std::string& host, const std::string& gpu);

struct ModelTerms {
  transport::Curve d2h, h2d, ipc;  // empty: not in the results (or incomplete)
  std::string d2h_row, h2d_row, ipc_row;
  int sizes = 0;                   // sizes of the fullest curve
};

// Reads Google Benchmark JSON written by dtmpi-scope on `host` with GPU model
// `gpu_name`: pinned copies of GPU `gpu` (naive/pinned/{d2h,h2d}/gpuG) and
// copies from GPU `src_gpu` into GPU `gpu` (naive/peer/d2d/gpuS-gpuG, or
// naive/device/d2d/gpuG when they are the same GPU). A curve is kept only
// when its row is complete: no size failed, at least 6 sizes, from <= 1 KiB
// to >= 64 MiB. False (and `why`) when the file is not usable at all.
bool read_model_terms(const std::string& json_text, const std::string& host, const std::string& gpu_name, int gpu,
                      int src_gpu, ModelTerms& out, std::string* why);

}  // namespace dtmpi::scope
