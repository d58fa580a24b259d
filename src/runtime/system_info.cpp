#include "runtime/system_info.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include "base/result.hpp"
#include "base/system_mpi.hpp"
#include "runtime/config.hpp"

namespace dtmpi::runtime {

CudaAware mpi_cuda_aware() {
  using QueryFn = int (*)();
  auto fn = reinterpret_cast<QueryFn>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"));
  if (!fn) return CudaAware::kUnknown;
  return fn() ? CudaAware::kYes : CudaAware::kNo;
}

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (!DTMPI_MPI_WARN(REAL(MPI_Get_library_version)(buf, &len))) return "unknown";
  std::string s(buf, static_cast<size_t>(len));
  auto nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == ',' || s.back() == '\0')) s.pop_back();
  return s;
}

bool host_receive_direct() {
  static const bool direct = [] {
    const std::string& v = config().host_recv;
    if (v != "auto") return v == "direct";
    return mpi_library_version().find("Open MPI") != std::string::npos;
  }();
  return direct;
}

}  // namespace dtmpi::runtime
