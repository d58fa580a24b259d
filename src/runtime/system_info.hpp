// What dtmpi detects about the machine and the system MPI (for dtmpi-info and
// the transfer layer): GPUs through the CUDA runtime, CUDA-awareness through
// MPIX_Query_cuda_support when the MPI library has it.
#pragma once
#include <string>
#include <vector>

namespace dtmpi::runtime {

struct GpuInfo {
  bool built_with_cuda = false;
  int count = 0;
  std::vector<std::string> names;
  std::string note;  // why no GPU is used, when none is
};

GpuInfo query_gpus();

enum class CudaAware { kYes, kNo, kUnknown };
CudaAware mpi_cuda_aware();
std::string mpi_library_version();  // MPI_Get_library_version, first line
// True where host receive buffers take the MPI_PACKED bytes of a sender that
// packed with dtmpi straight through the system MPI with their own datatype,
// false where they land in a staging buffer that dtmpi unpacks
// (DTMPI_HOST_RECV; auto: direct with Open MPI, whose unpack from its own
// transport buffers saves a copy; staged with others: MPICH unpacks such a
// message into a type of small blocks several times slower than it lands it).
bool host_receive_direct();

}  // namespace dtmpi::runtime
