// Strided copies by the copy engines (thesis Table 6.1): cudaMemcpy2DAsync
// between pinned host and device memory and within a GPU, cudaMemcpy3DAsync
// between pinned host and device memory, cudaMemcpy3DPeerAsync between GPUs
// (and within one). The device side is the non-contiguous one, as where dtmpi
// meets such data: rows of 256 bytes 512 bytes apart (2D; the pitch of
// TEMPI's 2D objects), and a box of such rows taking every other row of a
// plane twice its height (3D); the other side is dense. Bandwidth counts the
// bytes moved, not the span.
#include <cuda_runtime.h>  // make_cudaPitchedPtr, make_cudaExtent

#include "scope_gpu.hpp"

namespace dtmpi::scope::gpu {
namespace {

constexpr uint64_t kRow = 256;

struct Shape {
  uint64_t w, h, d;  // row bytes, rows (per plane), planes
};

Shape shape2d(uint64_t n) {
  const uint64_t w = n < kRow ? n : kRow;
  return {w, n / w, 1};
}

Shape shape3d(uint64_t n) {
  const uint64_t w = n < kRow ? n : kRow, rows = n / w;
  uint64_t h = 1;
  while (h * h * 4 <= rows) h *= 2;  // h = 2^floor(log2(rows) / 2)
  return {w, h, rows / h};
}

// The pitched (device) side and the dense side of each shape.
Layout pitched2d(const Shape& s) { return {s.w, 2 * s.w, 0, 0}; }
Layout pitched3d(const Shape& s) { return {s.w, 2 * s.w, s.h, 2 * s.h}; }

enum class Api { k2D, k3D, k3DPeer };

// One strided copy of `bytes` useful bytes: from `src` (laid out sl) to dst (dl).
Status strided_op(Api api, const Shape& s, char* dst, const Layout& dl, int dd, const char* src, const Layout& sl,
                  int sd, cudaStream_t stream) {
  auto pitch = [](const Layout& l, const Shape& sh) { return l.width ? l.pitch : sh.w; };
  auto rows = [](const Layout& l, const Shape& sh) { return l.width && l.rows ? l.rows : sh.h; };
  switch (api) {
    case Api::k2D:
      DTMPI_CUDA_CHECK(cudaMemcpy2DAsync(dst, pitch(dl, s), src, pitch(sl, s), s.w, s.h, cudaMemcpyDefault, stream));
      break;
    case Api::k3D: {
      cudaMemcpy3DParms p{};
      p.srcPtr = make_cudaPitchedPtr(const_cast<char*>(src), pitch(sl, s), s.w, rows(sl, s));
      p.dstPtr = make_cudaPitchedPtr(dst, pitch(dl, s), s.w, rows(dl, s));
      p.extent = make_cudaExtent(s.w, s.h, s.d);
      p.kind = cudaMemcpyDefault;
      DTMPI_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream));
      break;
    }
    case Api::k3DPeer: {
      cudaMemcpy3DPeerParms p{};
      p.srcPtr = make_cudaPitchedPtr(const_cast<char*>(src), pitch(sl, s), s.w, rows(sl, s));
      p.srcDevice = sd;
      p.dstPtr = make_cudaPitchedPtr(dst, pitch(dl, s), s.w, rows(dl, s));
      p.dstDevice = dd;
      p.extent = make_cudaExtent(s.w, s.h, s.d);
      DTMPI_CUDA_CHECK(cudaMemcpy3DPeerAsync(&p, stream));
      break;
    }
  }
  return ok_status();
}

struct Side {
  Mem mem;
  int where;
  bool pitched;
};

Status strided_row(benchmark::State& st, int64_t bytes, const std::string& row, Api api, Side src_side,
                   Side dst_side, int device) {
  const uint64_t n = static_cast<uint64_t>(bytes);
  const Shape s = api == Api::k2D ? shape2d(n) : shape3d(n);
  const Layout pitched = api == Api::k2D ? pitched2d(s) : pitched3d(s);
  const Layout sl = src_side.pitched ? pitched : Layout{}, dl = dst_side.pitched ? pitched : Layout{};
  if (sl.span(n) > capacity() || dl.span(n) > capacity())
    return Error{kErrUnsupported, row + ": the span exceeds the buffers"};
  auto sb = buffer(src_side.mem, src_side.where, 0);
  auto db = buffer(dst_side.mem, dst_side.where, 1);
  if (!sb) return sb.error();
  if (!db) return db.error();
  char *src = sb.value(), *dst = db.value();
  const uint32_t seed = seed_of(row, bytes);
  DTMPI_TRY(fill(src, src_side.mem, src_side.where, sl.span(n), seed));
  auto l = lane(device);
  if (!l) return l.error();
  const int sd = src_side.mem == Mem::kDevice ? src_side.where : device;
  const int dd = dst_side.mem == Mem::kDevice ? dst_side.where : device;
  DTMPI_TRY(event_loop(
      st, *l.value(),
      [&]() -> Status {
        flush(src, src_side.mem, sl.span(n));
        flush(dst, dst_side.mem, dl.span(n));
        return ok_status();
      },
      [&] { return strided_op(api, s, dst, dl, dd, src, sl, sd, l.value()->stream); }));
  return check(dst, dst_side.mem, dl, sl, n, seed, row);
}

}  // namespace

void register_strided_rows() {
  const int g = options().gpu, p = options().peer;
  const std::string skip = machine().gpus ? "" : machine().no_gpu;
  const auto sizes2d = sizes_up_to(static_cast<int64_t>(capacity() / 2));
  const auto sizes3d = sizes_up_to(static_cast<int64_t>(capacity() / 4));
  auto row = [&](const std::string& name, Api api, Side src, Side dst, int device, const std::string& why,
                 bool peer) {
    const auto& sizes = api == Api::k2D ? sizes2d : sizes3d;
    add({.name = name, .body = [=](benchmark::State& st, int64_t n) -> Status {
           if (peer) DTMPI_TRY(set_peer_access(src.where, dst.where, true));
           return strided_row(st, n, name, api, src, dst, device);
         }, .skip = why, .sizes = sizes});
  };
  const Side host{Mem::kPinned, -1, false};
  auto dev = [](int d, bool pitched) { return Side{Mem::kDevice, d, pitched}; };
  row("memcpy2d/h2d/" + place(g), Api::k2D, host, dev(g, true), g, skip, false);
  row("memcpy2d/d2h/" + place(g), Api::k2D, dev(g, true), host, g, skip, false);
  row("memcpy2d/d2d/" + place(g), Api::k2D, dev(g, true), dev(g, false), g, skip, false);
  row("memcpy3d/h2d/" + place(g), Api::k3D, host, dev(g, true), g, skip, false);
  row("memcpy3d/d2h/" + place(g), Api::k3D, dev(g, true), host, g, skip, false);
  row("memcpy3dpeer/d2d/" + place(g), Api::k3DPeer, dev(g, true), dev(g, false), g, skip, false);
  std::string two = skip;
  if (two.empty() && p < 0) two = "one GPU (the GPU to GPU rows need two; --peer N)";
  if (two.empty() && !machine().peer_ok) two = machine().no_peer;
  // issued on the receiving GPU, as the explicit GPU to GPU rows
  row("memcpy3dpeer/d2d/" + place(g, p), Api::k3DPeer, dev(g, true), dev(p, false), p, two, true);
}

}  // namespace dtmpi::scope::gpu
