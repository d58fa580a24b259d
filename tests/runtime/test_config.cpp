// Configuration: every DTMPI_* variable the code knows is documented, and
// unknown ones are reported.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
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
