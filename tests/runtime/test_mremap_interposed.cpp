// libdtmpi's mremap (interpose/memory_maps.cpp, issue 29): the kernel does
// not record mremap for the mapping watch, so dtmpi defines it and counts
// each call. Here, linked before the C library as a program links dtmpi:
// the process's mremap is libdtmpi's, and it does what the C library's does
// -- grow in place, move, move to a fixed address (data kept), and fail with
// the same errno on a bad call.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/dtmpi_stats.hpp"
#include "dtmpi/dtmpi.h"

namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// libdtmpi's own verdict (dtmpi_stats): whether mremap calls made through a
// library's GOT reach its definition. Where they do not, a known diverter is
// in the process -- UCX's memory hooks (libucm, loaded by MPICH's ch4:ucx or
// Open MPI's UCX components) rewrite the GOT entries -- and libdtmpi then
// keeps the mapping watch off (interpose/init.cpp); its mremap is not the one
// called, so its behaviour is not what the calls below would test.
bool calls_reach_dtmpi() {
  const std::string s = dtmpi_stats();
  return s.find("mremap calls reach dtmpi yes") != std::string::npos;
}
#define REQUIRE_REACHED()                                                                                   \
  if (!calls_reach_dtmpi()) {                                                                               \
    ASSERT_NE(dlopen("libucm.so.0", RTLD_NOW | RTLD_NOLOAD), nullptr)                                       \
        << "mremap calls do not reach libdtmpi's, and UCX's memory hooks are not what diverts them";        \
    GTEST_SKIP() << "UCX's memory hooks (libucm) divert mremap calls: libdtmpi keeps the mapping watch off"; \
  }

TEST(Mremap, TheProcessesMremapIsLibdtmpis) {
  void* global = dlsym(RTLD_DEFAULT, "mremap");
  ASSERT_NE(global, nullptr);
  // the object defining the process's MPI_Init (libdtmpi, linked first)
  Dl_info info{}, dtmpi{};
  ASSERT_NE(dladdr(global, &info), 0);
  ASSERT_NE(dladdr(dlsym(RTLD_DEFAULT, "MPI_Init"), &dtmpi), 0);
  ASSERT_NE(dtmpi.dli_fname, nullptr);
  ASSERT_NE(std::string(dtmpi.dli_fname).find("dtmpi"), std::string::npos) << "MPI_Init is " << dtmpi.dli_fname;
  EXPECT_EQ(info.dli_fbase, dtmpi.dli_fbase)
      << "mremap resolves to " << (info.dli_fname ? info.dli_fname : "?")
      << ", not libdtmpi: the driver's mremap calls would go unseen";
}

// Each call is counted (libdtmpi's "mremap calls counted" statistic): the
// count is what ends the learned mappings' trust.
TEST(Mremap, EachCallIsCounted) {
  REQUIRE_REACHED();
  const uint64_t before = dtmpi::testing::stat_value("mremap calls counted ");
  void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  void* q = mremap(p, kPage, 2 * kPage, MREMAP_MAYMOVE);
  ASSERT_NE(q, MAP_FAILED);
  errno = 0;
  EXPECT_EQ(mremap(q, 2 * kPage, 0, 0), MAP_FAILED);  // a failed call is counted too
  EXPECT_EQ(dtmpi::testing::stat_value("mremap calls counted "), before + 2);
  munmap(q, 2 * kPage);
}

TEST(Mremap, BehavesAsTheCLibrarys) {
  REQUIRE_REACHED();
  auto* p = static_cast<char*>(mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 7, 2 * kPage);
  // move (and grow)
  auto* q = static_cast<char*>(mremap(p, 2 * kPage, 8 * kPage, MREMAP_MAYMOVE));
  ASSERT_NE(q, MAP_FAILED) << std::strerror(errno);
  EXPECT_EQ(q[0], 7);
  EXPECT_EQ(q[2 * kPage - 1], 7);
  q[8 * kPage - 1] = 1;
  // shrink in place
  EXPECT_EQ(mremap(q, 8 * kPage, 4 * kPage, 0), static_cast<void*>(q));
  // move to a fixed address (the variadic fifth argument)
  auto* target = static_cast<char*>(mmap(nullptr, 4 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(target, MAP_FAILED);
  auto* r = static_cast<char*>(mremap(q, 4 * kPage, 4 * kPage, MREMAP_MAYMOVE | MREMAP_FIXED, target));
  ASSERT_EQ(r, target) << std::strerror(errno);
  EXPECT_EQ(r[kPage], 7);
  // a bad call: the C library's errno
  errno = 0;
  EXPECT_EQ(mremap(r, 4 * kPage, 0, 0), MAP_FAILED);
  EXPECT_EQ(errno, EINVAL);
  munmap(r, 4 * kPage);
}

}  // namespace
