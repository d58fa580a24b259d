// runtime/mapped_host.hpp without a GPU: /proc/self/maps lines are judged as
// the driver's mappings require (its reservations, device-file and /dev/zero
// mappings are never ordinary host memory); a learned mapping is trusted
// only until the process makes any new mapping -- by this thread, by a
// thread that existed before the watch began, by a thread created after it
// and by that thread's own children, or an mremap (counted by the
// interposer); an address whose mapping was replaced
// by a reservation (the driver's look) is never called host; the ski-rental
// rule reads /proc/self/maps only as often as the queries pay for; random
// mappings, replacements and checks from several threads.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "runtime/host_ranges.hpp"
#include "runtime/mapped_host.hpp"

namespace {

namespace rt = dtmpi::runtime;
using rt::provably_host;

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// A thread that exists before the watch starts (as the system MPI's and the
// driver's threads may at MPI_Init) and runs what it is given.
class EarlyThread {
 public:
  EarlyThread() : thread_([this] { loop(); }) {}
  ~EarlyThread() {
    run({});
    thread_.join();
  }
  // Runs f on the thread and waits for it; an empty f ends the thread.
  void run(std::function<void()> f) {
    std::unique_lock lock(mu_);
    job_ = std::move(f);
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !pending_; });
  }

 private:
  void loop() {
    for (;;) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return pending_; });
      auto f = std::move(job_);
      const bool stop = !f;
      if (f) f();
      pending_ = false;
      cv_.notify_all();
      if (stop) return;
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool pending_ = false;
  std::thread thread_;
};
EarlyThread* g_early = nullptr;
bool g_watching = false;

#define REQUIRE_WATCH()                                                                           \
  if (!g_watching) GTEST_SKIP() << "the mapping watch cannot run here: " << rt::mapping_watch().why_off

// A page of ordinary memory between two reservations, so that the kernel
// cannot merge it with a neighbour: [guard | page | guard].
struct IsolatedPage {
  char* base = nullptr;
  char* page = nullptr;
  IsolatedPage() {
    base = static_cast<char*>(mmap(nullptr, 3 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED) std::abort();
    page = base + kPage;
    if (mprotect(page, kPage, PROT_READ | PROT_WRITE) != 0) std::abort();
  }
  ~IsolatedPage() { munmap(base, 3 * kPage); }
};

void* map_somewhere() {
  void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::abort();
  return p;
}

TEST(MapsLine, JudgesTheDriversMappingsAndOrdinaryOnes) {
  struct Case {
    const char* line;
    bool ordinary;
  } cases[] = {
      // what a process using an H100 shows (driver 580, probed 2026-11-27)
      {"7fc780600000-7fc780800000 rw-p 00000000 00:00 0 ", true},           // a program's own mmap
      {"7fbd88000000-7fbd88021000 rw-p 00000000 00:00 0", true},            // a thread's malloc arena
      {"559d78a7e000-559d798f3000 rw-p 00000000 00:00 0                          [heap]", true},
      {"7ffc1a2b3000-7ffc1a2d4000 rw-p 00000000 00:00 0                          [stack]", true},
      {"7f0000000000-7f0000100000 rw-p 00000000 00:00 0                          [anon:glibc]", true},
      {"7fc550000000-7fc570000000 ---p 00000000 00:00 0 ", false},           // device memory's reservation
      {"200000000-300200000 ---p 00000000 00:00 0 ", false},                 // the driver's low reservation
      {"7fbd8e000000-7fbd8e200000 rw-s 7fbd8e000000 00:06 144                    /dev/nvidia-uvm", false},
      {"7fc56e800000-7fc56ea00000 rw-s 00000000 00:01 2052                       /dev/zero (deleted)", false},
      {"200800000-204000000 rw-s 00000000 00:06 142                              /dev/nvidiactl", false},
      {"7fc784aae000-7fc784abe000 -w-s 00000000 00:06 143                        /dev/nvidia0", false},
      {"7f1234000000-7f1234100000 rw-p 00000000 08:01 131 /usr/lib/x86_64-linux-gnu/libc.so.6", false},
      {"7f1234000000-7f1234100000 rw-p 00000000 00:00 0 /dev/zero", false},  // a path, though inode 0
      {"7f1234000000-7f1234100000 r--p 00000000 00:00 0 ", false},
      {"7f1234000000-7f1234100000 rw-s 00000000 00:01 17 /SYSV00000000 (deleted)", false},
      {"7fff8a1fe000-7fff8a202000 r--p 00000000 00:00 0                          [vvar]", false},
  };
  for (const Case& c : cases) {
    rt::MapsLine m;
    ASSERT_TRUE(rt::parse_maps_line(c.line, m)) << c.line;
    EXPECT_EQ(m.ordinary_host, c.ordinary) << c.line;
    EXPECT_LT(m.lo, m.hi) << c.line;
  }
  rt::MapsLine m;
  EXPECT_TRUE(rt::parse_maps_line("7fc550000000-7fc570000000 rw-p 00000000 00:00 0", m));
  EXPECT_EQ(m.lo, 0x7fc550000000u);
  EXPECT_EQ(m.hi, 0x7fc570000000u);
  for (const char* bad : {"", "garbage", "7fc5-", "10-5 rw-p 0 00:00 0", "7fc550000000-7fc570000000 rw-p"})
    EXPECT_FALSE(rt::parse_maps_line(bad, m)) << bad;
}

TEST(MappedHost, LearnsExactlyTheOrdinaryMapping) {
  REQUIRE_WATCH();
  IsolatedPage iso;
  EXPECT_FALSE(provably_host(iso.page));  // not learned yet
  ASSERT_TRUE(rt::learn_mapping_now(iso.page));
  EXPECT_TRUE(provably_host(iso.page));
  EXPECT_TRUE(provably_host(iso.page + kPage - 1));
  EXPECT_FALSE(provably_host(iso.page + kPage));  // the reservation after it
  EXPECT_FALSE(provably_host(iso.page - 1));      // and before it
  EXPECT_FALSE(rt::learn_mapping_now(iso.base));  // a reservation is never learned
  EXPECT_FALSE(provably_host(iso.base));
}

TEST(MappedHost, AnyNewMappingEndsTheTrust) {
  REQUIRE_WATCH();
  IsolatedPage iso;
  ASSERT_TRUE(rt::learn_mapping_now(iso.page));
  void* other = map_somewhere();
  EXPECT_FALSE(provably_host(iso.page)) << "a mapping made after the learning";
  ASSERT_TRUE(rt::learn_mapping_now(iso.page));
  EXPECT_TRUE(provably_host(iso.page));
  munmap(other, kPage);  // an unmap alone changes nothing the learned mapping proves
  EXPECT_TRUE(provably_host(iso.page));
}

TEST(MappedHost, AReplacedMappingIsNeverHost) {
  REQUIRE_WATCH();
  IsolatedPage iso;
  ASSERT_TRUE(rt::learn_mapping_now(iso.page));
  // what glibc's free and the driver may do unseen: unmap, then reserve the
  // same addresses for device memory
  ASSERT_EQ(munmap(iso.page, kPage), 0);
  void* r = mmap(iso.page, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(r, static_cast<void*>(iso.page));
  EXPECT_FALSE(provably_host(iso.page));
  EXPECT_FALSE(rt::learn_mapping_now(iso.page));
  EXPECT_FALSE(provably_host(iso.page));
  // MAP_FIXED straight over a learned mapping, and mprotect of part of one
  IsolatedPage iso2;
  ASSERT_TRUE(rt::learn_mapping_now(iso2.page));
  ASSERT_EQ(mmap(iso2.page, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
            static_cast<void*>(iso2.page));
  EXPECT_FALSE(provably_host(iso2.page));
  IsolatedPage iso3;
  ASSERT_TRUE(rt::learn_mapping_now(iso3.page));
  ASSERT_EQ(mprotect(iso3.page, kPage, PROT_NONE), 0);
  EXPECT_FALSE(provably_host(iso3.page));
}

// mremap is not recorded by the kernel: the interposed one counts each call
// (note_unrecorded_mapping_change), which ends the trust like a new mapping.
TEST(MappedHost, AnUnrecordedChangeEndsTheTrust) {
  REQUIRE_WATCH();
  IsolatedPage iso;
  ASSERT_TRUE(rt::learn_mapping_now(iso.page));
  rt::note_unrecorded_mapping_change();
  EXPECT_FALSE(provably_host(iso.page));
  ASSERT_TRUE(rt::learn_mapping_now(iso.page));
  EXPECT_TRUE(provably_host(iso.page));
}

TEST(MappedHost, EveryThreadsMappingsAreSeen) {
  REQUIRE_WATCH();
  IsolatedPage iso;
  std::vector<void*> maps;
  std::mutex mu;
  auto map_one = [&] {
    void* p = map_somewhere();
    std::lock_guard lock(mu);
    maps.push_back(p);
  };
  // Each thread is created (its stack is a mapping of its creator) before
  // the learning; only its own mapping comes after.
  auto seen = [&](EarlyThread& t, const char* who) {
    ASSERT_TRUE(rt::learn_mapping_now(iso.page));
    ASSERT_TRUE(provably_host(iso.page));
    t.run(map_one);
    EXPECT_FALSE(provably_host(iso.page)) << who << "'s mapping was not seen";
  };
  seen(*g_early, "a thread that existed before the watch began");
  EarlyThread later;
  seen(later, "a thread created after it");
  EarlyThread* grandchild = nullptr;
  later.run([&] { grandchild = new EarlyThread; });
  seen(*grandchild, "a thread that thread created");
  later.run([&] { delete grandchild; });
  EarlyThread* early_child = nullptr;
  g_early->run([&] { early_child = new EarlyThread; });
  seen(*early_child, "a thread the early thread created");
  g_early->run([&] { delete early_child; });
  for (void* p : maps) munmap(p, kPage);
}

TEST(MappedHost, ReadsTheMapsFileOnlyAsOftenAsTheQueriesPay) {
  REQUIRE_WATCH();
  IsolatedPage a, b;
  rt::forget_learned_mappings();
  // drive the rule until it reads once, then count what the next read takes
  uint64_t learns = rt::mapping_watch().learns;
  int guard = 0;
  while (rt::mapping_watch().learns == learns && guard++ < 10000000) rt::note_driver_host(a.page);
  ASSERT_GT(rt::mapping_watch().learns, learns);
  EXPECT_TRUE(provably_host(a.page));
  const rt::MappingWatch after = rt::mapping_watch();
  ASSERT_GT(after.last_learn_ns, 0);
  int64_t notes = 0;
  while (rt::mapping_watch().learns == after.learns && notes < 10000000) {
    rt::note_driver_host(b.page);
    ++notes;
  }
  // 100 ns a query: the read happens once the notes cost what it did
  const int64_t due = after.last_learn_ns / 100;
  EXPECT_GE(notes, due) << "read before the queries paid for it";
  EXPECT_LE(notes, due + 1);
  EXPECT_TRUE(provably_host(b.page));
  EXPECT_TRUE(provably_host(a.page)) << "both mappings are trusted (no new mapping between)";
}

// Several threads map, replace with reservations, unmap, learn and check at
// random; an address whose mapping is (or was, since the learning) anything
// but ordinary memory is never called host.
TEST(MappedHost, RandomMappingsFromSeveralThreads) {
  REQUIRE_WATCH();
  std::atomic<int> wrong{0}, trusted{0};
  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    struct Slot {
      char* p = nullptr;
      int state = 0;  // 0: none, 1: ordinary, 2: reservation
    } slots[6];
    for (int it = 0; it < 1500; ++it) {
      Slot& s = slots[rng() % 6];
      switch (rng() % 5) {
        case 0:  // map ordinary memory (at the old address where there was one)
          if (s.state == 0) {
            s.p = static_cast<char*>(map_somewhere());
          } else {
            s.p = static_cast<char*>(
                mmap(s.p, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
          }
          s.state = 1;
          break;
        case 1:  // the driver's look: a reservation at the same address
          if (s.state != 0) {
            mmap(s.p, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            s.state = 2;
          }
          break;
        case 2:
          if (s.state != 0) {
            munmap(s.p, kPage);
            s.state = 0;
          }
          break;
        default:
          if (s.state == 1) rt::learn_mapping_now(s.p + rng() % kPage);
          break;
      }
      for (Slot& t : slots) {
        if (t.state == 0) continue;
        const bool host = provably_host(t.p + rng() % kPage);
        if (host && t.state != 1) wrong.fetch_add(1);
        if (host) trusted.fetch_add(1);
      }
    }
    for (Slot& t : slots)
      if (t.state != 0) munmap(t.p, kPage);
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 4; ++i) threads.emplace_back(worker, 1234 + i);
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  // the other threads' mappings keep ending the trust; one thread alone
  // shows that trust is given at all
  std::thread(worker, 99).join();
  EXPECT_GT(trusted.load(), 0) << "nothing was ever trusted: the test proves nothing";
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_early = new EarlyThread;  // before the watch, as the system MPI's threads may be
  // the runtime alone: no interposed mremap here (test_mremap_interposed
  // checks libdtmpi's); the count it feeds is tested directly
  g_watching = rt::start_mapping_watch(false);
  if (!g_watching) std::printf("mapping watch off: %s\n", rt::mapping_watch().why_off.c_str());
  const int rc = RUN_ALL_TESTS();
  delete g_early;
  return rc;
}
