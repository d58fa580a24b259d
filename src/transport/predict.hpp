// Predicted time of one point-to-point transfer by each method, from a Model,
// and the runtime's choice: the loaded model (or the built-in defaults) and a
// memo of decisions keyed by what they depend on.
#pragma once
#include <cstdint>
#include <string>

#include "transport/model.hpp"

namespace dtmpi::transport {

enum class Method : uint8_t;

// What a decision depends on.
struct Shape {
  int64_t bytes = 0;   // packed bytes
  int64_t block = 1;   // typical contiguous block of the layout
  int64_t pitch = 0;   // distance between consecutive blocks (0: unknown, taken as 2 x block)
  bool ipc = false;    // GPU to GPU over CUDA IPC possible (same node, both on GPUs)
  bool multi = true;   // multi-message methods allowed (>= kMultiMin, known peer)
};

struct Prediction {
  double seconds[4] = {-1, -1, -1, -1};  // by Method; < 0: not applicable
  Method best{};
};

Prediction predict(const Model& m, const Shape& s, int64_t chunk_bytes);

// The model in force (loaded at MPI_Init, else the defaults).
const Model& current_model();
// Loads the model file for this host and GPU from the cache directory; says
// once (on rank `rank` 0) when it falls back to the defaults. Returns the path tried.
std::string load_model(int rank, const std::string& gpu_name);
// Directory and file name of the model for (host, GPU).
std::string model_cache_dir();
std::string model_file_name(const std::string& host, const std::string& gpu);

// The memoized choice for `s` (DTMPI_LOG=decisions logs each first decision).
Method choose_by_model(const Shape& s);
void clear_decisions();  // for the decision-overhead benchmark

}  // namespace dtmpi::transport
