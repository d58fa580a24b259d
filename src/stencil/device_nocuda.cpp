// Device-memory domains in a build without CUDA: realize() reports it.
#include <mpi.h>

#include "stencil/domain_impl.hpp"

namespace dtmpi::stencil {
namespace {
Error no_cuda() {
  return Error{MPI_ERR_ARG, "dtmpi::stencil: Memory::kDevice needs dtmpi built with CUDA (DTMPI_CUDA=ON)"};
}
}  // namespace

Status device_allocate(DomainImpl&) { return no_cuda(); }
void device_release(DomainImpl&) noexcept {}
int current_device() noexcept { return -1; }
std::vector<int> slot_devices(const DomainImpl& d) { return std::vector<int>(static_cast<size_t>(d.per_rank > 0 ? d.per_rank : 0), -1); }
uint64_t device_uuid_digest(int) noexcept { return 0; }
Status device_pack(DomainImpl&) { return no_cuda(); }
Result<bool> device_packs_done(DomainImpl&, bool) { return no_cuda(); }
Status device_copy_local(DomainImpl&) { return no_cuda(); }
Status device_unpack(DomainImpl&) { return no_cuda(); }

}  // namespace dtmpi::stencil
