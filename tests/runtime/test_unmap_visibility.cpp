// Why dtmpi does not cache the CUDA driver's "not CUDA memory" answers for
// mmap'd memory, invalidated by an interposed munmap (issue 29, option (b)):
// glibc's free of a large block unmaps it through its own internal munmap,
// which no munmap symbol sees -- the block's addresses are free for the next
// mapping (the driver's too) while such a cache still held them host. Here
// munmap is interposed by this executable (it precedes libc in the lookup
// order, as a preloaded libdtmpi would): a program's own munmap is seen, the
// unmapping inside free is not.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {
std::atomic<int> g_munmaps{0};

// Whether an entry of /proc/self/maps holds address `a` (an integer: asked
// after the memory is freed, where a pointer's use is an error to newer GCCs).
bool mapped(uintptr_t a) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) found = a >= lo && a < hi;
  }
  std::fclose(f);
  return found;
}
}  // namespace

extern "C" int munmap(void* addr, size_t len) noexcept {
  g_munmaps.fetch_add(1);
  return static_cast<int>(syscall(SYS_munmap, addr, len));
}

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kGlibcMalloc = false;  // AddressSanitizer's allocator keeps freed blocks
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif
#else
constexpr bool kGlibcMalloc = true;
#endif

TEST(UnmapVisibility, TheProgramsOwnMunmapIsSeen) {
  void* m = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  const int before = g_munmaps.load();
  ASSERT_EQ(munmap(m, 1 << 20), 0);
  EXPECT_EQ(g_munmaps.load(), before + 1);
  EXPECT_FALSE(mapped(reinterpret_cast<uintptr_t>(m)));
}

TEST(UnmapVisibility, FreeOfALargeBlockUnmapsUnseen) {
  if (!kGlibcMalloc) GTEST_SKIP() << "not glibc's allocator";
  // above glibc's largest dynamic mmap threshold (32 MiB): an mmap of its own
  const size_t len = size_t{64} << 20;
  auto* big = static_cast<char*>(std::malloc(len));
  ASSERT_NE(big, nullptr);
  big[0] = 1;
  const auto where = reinterpret_cast<uintptr_t>(big);
  ASSERT_TRUE(mapped(where));
  const int before = g_munmaps.load();
  std::free(big);
  EXPECT_FALSE(mapped(where)) << "free kept the block mapped";
  EXPECT_EQ(g_munmaps.load(), before) << "glibc's free went through the munmap symbol";
}

}  // namespace
