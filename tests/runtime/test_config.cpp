// Configuration: every DTMPI_* variable the code knows is documented, and
// unknown ones are reported.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "runtime/config.hpp"

TEST(Config, EveryVariableIsDocumented) {
  std::ifstream f(DTMPI_SOURCE_DIR "/docs/configuration.md");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  for (const auto& v : dtmpi::runtime::kVariables)
    EXPECT_NE(ss.str().find(std::string("`") + v.name + "`"), std::string::npos) << v.name;
}

TEST(Config, UnknownVariablesAreReported) {
  setenv("DTMPI_NO_SUCH_THING", "1", 1);
  auto unknown = dtmpi::runtime::unknown_variables();
  unsetenv("DTMPI_NO_SUCH_THING");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0], "DTMPI_NO_SUCH_THING");
}

TEST(Config, FlagsParse) {
  setenv("DTMPI_DISABLE", "1", 1);
  setenv("DTMPI_HOST_PACK", "off", 1);
  dtmpi::runtime::reload_config();
  EXPECT_TRUE(dtmpi::runtime::config().disable);
  EXPECT_FALSE(dtmpi::runtime::config().host_pack);
  unsetenv("DTMPI_DISABLE");
  unsetenv("DTMPI_HOST_PACK");
  dtmpi::runtime::reload_config();
  EXPECT_FALSE(dtmpi::runtime::config().disable);
}

namespace {
// Sets `name` to `value`, reads the environment again, and returns the
// problems reported; the variable is unset again when the guard goes.
struct Env {
  const char* name;
  Env(const char* n, const char* value) : name(n) {
    setenv(n, value, 1);
    dtmpi::runtime::reload_config();
  }
  ~Env() {
    unsetenv(name);
    dtmpi::runtime::reload_config();
  }
};

std::string problems() {
  std::string all;
  for (const auto& p : dtmpi::runtime::invalid_values()) all += p + "\n";
  return all;
}
}  // namespace

TEST(Config, ValidValuesAreQuiet) {
  const char* good[][2] = {{"DTMPI_DISABLE", "no"},          {"DTMPI_STATS", "TRUE"},
                           {"DTMPI_LOG", "debug"},           {"DTMPI_CUDA", "off"},
                           {"DTMPI_METHOD", "pipelined"},    {"DTMPI_HOST_RECV", "direct"},
                           {"DTMPI_GPU_ORDER", "stream"},    {"DTMPI_CUDA_AWARE", "0"},
                           {"DTMPI_PIPELINE_CHUNK", "256K"}, {"DTMPI_GATED_UNPACK_MAX", "1MiB"},
                           {"DTMPI_RANKS_PER_NODE", "4"},    {"DTMPI_HOST_STAGING_MAX_BLOCK", "64"}};
  for (const auto& [name, value] : good) {
    Env e(name, value);
    EXPECT_EQ(problems(), "") << name << "=" << value;
  }
}

TEST(Config, ValuesParse) {
  const auto& c = dtmpi::runtime::config();
  {
    Env e("DTMPI_PIPELINE_CHUNK", "256k");
    EXPECT_EQ(c.pipeline_chunk, 256 << 10);
  }
  {
    Env e("DTMPI_GATED_UNPACK_MAX", "2M");
    EXPECT_EQ(c.gated_unpack_max, 2 << 20);
  }
  {
    Env e("DTMPI_IPC_CHUNK_MIN", "1G");
    EXPECT_EQ(c.ipc_chunk_min, int64_t{1} << 30);
  }
  {
    Env e("DTMPI_LOG", "Decisions");
    EXPECT_EQ(c.log, "decisions");
    EXPECT_TRUE(c.log_decisions);
  }
  {
    Env e("DTMPI_CUDA_AWARE", "yes");
    EXPECT_EQ(c.cuda_aware, "1");
  }
  {
    Env e("DTMPI_CUDA", "0");
    EXPECT_EQ(c.cuda, "off");
  }
}

// Every kind of variable: a bad value is reported with what the variable
// accepts, and the default is used instead (issue 25: DTMPI_DISABLE=maybe
// disabled dtmpi, DTMPI_LOG=xyz went unnoticed).
TEST(Config, InvalidValuesAreReportedAndTakeTheDefault) {
  const auto& c = dtmpi::runtime::config();
  struct Case {
    const char* name;
    const char* value;
    const char* expected;  // in the message
    std::function<bool()> is_default;
  };
  const Case cases[] = {
      {"DTMPI_DISABLE", "maybe", "a boolean (1, 0, on, off, true, false, yes, no): using 0", [&] { return !c.disable; }},
      {"DTMPI_HOST_PACK", "2", "a boolean", [&] { return c.host_pack; }},
      {"DTMPI_STATS", "yess", "a boolean", [&] { return !c.stats; }},
      {"DTMPI_BATCH_PACKS", "on1", "a boolean", [&] { return !c.batch_packs; }},
      {"DTMPI_LOG", "xyz", "one of error, warn, info, debug, decisions: using warn", [&] { return c.log == "warn"; }},
      {"DTMPI_CUDA", "maybe", "one of auto, off: using auto", [&] { return c.cuda == "auto"; }},
      {"DTMPI_METHOD", "fast", "one of auto, oneshot, staged, pipelined, device", [&] { return c.method == "auto"; }},
      {"DTMPI_HOST_RECV", "both", "one of auto, staged, direct", [&] { return c.host_recv == "auto"; }},
      {"DTMPI_GPU_ORDER", "none", "one of legacy, stream", [&] { return c.gpu_order_legacy; }},
      {"DTMPI_CUDA_AWARE", "2", "one of auto, 1, 0", [&] { return c.cuda_aware == "auto"; }},
      {"DTMPI_PIPELINE_CHUNK", "12abc", "a byte count of at least 4096 and at most 1024G (suffix K, M or G allowed): using 2097152",
       [&] { return c.pipeline_chunk == 2 << 20; }},
      {"DTMPI_PIPELINE_CHUNK", "1024", "at least 4096", [&] { return c.pipeline_chunk == 2 << 20; }},
      {"DTMPI_PIPELINE_CHUNK", "-5M", "a byte count", [&] { return c.pipeline_chunk == 2 << 20; }},
      {"DTMPI_GATED_UNPACK_MAX", "99999999999999999999", "a byte count", [&] { return c.gated_unpack_max == 8 << 20; }},
      {"DTMPI_IPC_CHUNK_MIN", "2048G", "at most 1024G", [&] { return c.ipc_chunk_min == int64_t{8} << 20; }},
      {"DTMPI_IPC_CHUNK_MIN", "9999999999G", "a byte count", [&] { return c.ipc_chunk_min == int64_t{8} << 20; }},
      {"DTMPI_HOST_STAGING_MAX_BLOCK", "0", "at least 1", [&] { return c.host_staging_max_block == 512; }},
      {"DTMPI_RANKS_PER_NODE", "4K", "an integer of at least 0", [&] { return c.ranks_per_node == 0; }},
      {"DTMPI_RANKS_PER_NODE", "two", "an integer", [&] { return c.ranks_per_node == 0; }},
  };
  for (const auto& k : cases) {
    Env e(k.name, k.value);
    const std::string p = problems();
    EXPECT_NE(p.find(std::string(k.name) + "=" + k.value + " is not "), std::string::npos) << p;
    EXPECT_NE(p.find(k.expected), std::string::npos) << k.name << "=" << k.value << ": " << p;
    EXPECT_TRUE(k.is_default()) << k.name << "=" << k.value;
  }
  EXPECT_EQ(problems(), "");
}
