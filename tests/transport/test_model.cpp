// The performance model: interpolation in log-log space with clamping, the
// JSON file round trip, and the loader's refusals (other library version,
// other GPU, corrupt file, missing file) falling back to the defaults; the
// decision memo. No MPI processes needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "runtime/config.hpp"
#include "transport/model.hpp"
#include "transport/predict.hpp"
#include "transport/transfer.hpp"

namespace tp = dtmpi::transport;

namespace {

tp::Curve line(double latency, double bw) {
  tp::Curve c;
  for (double b : {1.0, 1024.0, 1048576.0}) {
    c.bytes.push_back(b);
    c.seconds.push_back(latency + b / bw);
    c.spread.push_back(0.01);
  }
  return c;
}

tp::Model measured(const std::string& gpu) {
  tp::Model m = tp::default_model();
  m.defaults = false;
  m.library_version = DTMPI_VERSION;
  m.host = "testhost";
  m.gpu = gpu;
  m.mpi = line(1e-6, 1e10);
  return m;
}

std::string write_model_file(const std::string& dir, const std::string& text, const std::string& gpu) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string path = dir + "/" + tp::model_file_name(host, gpu);
  std::ofstream(path) << text;
  return path;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/dtmpi-model-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

}  // namespace

TEST(Model, CurveInterpolatesInLogLogAndClamps) {
  tp::Curve c;
  c.bytes = {1, 100, 10000};
  c.seconds = {1e-6, 1e-4, 1e-2};  // a power law: exact in log-log space
  c.spread = {0, 0, 0};
  EXPECT_NEAR(c.at(10), 1e-5, 1e-12);
  EXPECT_NEAR(c.at(1000), 1e-3, 1e-10);
  EXPECT_DOUBLE_EQ(c.at(0.5), 1e-6);   // clamped below
  EXPECT_DOUBLE_EQ(c.at(1e9), 1e-2);   // clamped above
  EXPECT_NEAR(c.at(100), 1e-4, 1e-15);  // a measured point
}

TEST(Model, GridInterpolatesBothAxesAndSkipsUnmeasuredCells) {
  tp::Grid g;
  g.bytes = {1024, 1048576};
  g.blocks = {1, 1024, 1048576};
  g.seconds = {{4e-6, 2e-6, -1}, {4e-3, 1e-4, 5e-5}};
  g.spread = {{0, 0, 0}, {0, 0, 0}};
  EXPECT_DOUBLE_EQ(g.at(1024, 1), 4e-6);
  EXPECT_NEAR(g.at(1048576, 1048576), 5e-5, 1e-15);
  EXPECT_NEAR(g.at(1024, 32), std::sqrt(4e-6 * 2e-6), 1e-12);  // halfway between blocks 1 and 1024
  EXPECT_NEAR(g.at(32768, 1), std::sqrt(4e-6 * 4e-3), 1e-9);     // halfway between sizes
  // a block larger than the object is clamped to the object; the row's last
  // cell is unmeasured and never used
  EXPECT_DOUBLE_EQ(g.at(1024, 4096), 2e-6);
  EXPECT_GT(g.at(1024, 1024), 0);
}

TEST(Model, StrideInterpolatesBetweenNarrowAndWideGrids) {
  tp::Grid narrow, wide;
  narrow.bytes = wide.bytes = {1 << 20};
  narrow.blocks = wide.blocks = {8};
  narrow.seconds = {{1e-5}};
  wide.seconds = {{8e-5}};
  narrow.spread = wide.spread = {{0}};
  EXPECT_NEAR(tp::device_kernel_time(narrow, wide, 1 << 20, 8, 16), 1e-5, 1e-15);   // pitch 2 x block
  EXPECT_NEAR(tp::device_kernel_time(narrow, wide, 1 << 20, 8, 128), 8e-5, 1e-15);  // pitch 16 x block
  EXPECT_NEAR(tp::device_kernel_time(narrow, wide, 1 << 20, 8, 32), 2e-5, 1e-12);   // a third of the way: x2
  EXPECT_NEAR(tp::device_kernel_time(narrow, wide, 1 << 20, 8, 4096), 8e-5, 1e-15); // clamped
  EXPECT_NEAR(tp::device_kernel_time(narrow, tp::Grid{}, 1 << 20, 8, 4096), 1e-5, 1e-15);  // no wide grid
}

TEST(Model, JsonRoundTrip) {
  tp::Model m = measured("NVIDIA Test GPU");
  m.ipc = line(5e-6, 1e11);
  m.quick = true;
  std::string why;
  auto back = tp::parse_model(tp::to_json(m), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->gpu, m.gpu);
  EXPECT_EQ(back->library_version, m.library_version);
  EXPECT_TRUE(back->quick);
  ASSERT_EQ(back->mpi.bytes.size(), m.mpi.bytes.size());
  for (size_t i = 0; i < m.mpi.bytes.size(); ++i) {
    EXPECT_DOUBLE_EQ(back->mpi.bytes[i], m.mpi.bytes[i]);
    EXPECT_NEAR(back->mpi.seconds[i], m.mpi.seconds[i], m.mpi.seconds[i] * 1e-8);
  }
  ASSERT_EQ(back->pack_device.seconds.size(), m.pack_device.seconds.size());
  for (size_t i = 0; i < m.pack_device.seconds.size(); ++i)
    for (size_t j = 0; j < m.pack_device.seconds[i].size(); ++j)
      EXPECT_NEAR(back->pack_device.seconds[i][j], m.pack_device.seconds[i][j], 1e-8 * std::fabs(m.pack_device.seconds[i][j]));
  EXPECT_NEAR(back->ipc.at(4096), m.ipc.at(4096), 1e-12);
}

TEST(Model, CorruptTextIsRefusedWithAReason) {
  const tp::Model m = measured("");
  const std::string good = tp::to_json(m);
  std::string why;
  EXPECT_FALSE(tp::parse_model(good.substr(0, good.size() / 2), &why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(tp::parse_model("{\"format\": \"other\"}", &why));
  std::string bad_schema = good;
  bad_schema.replace(bad_schema.find("\"schema\": 1"), 11, "\"schema\": 99");
  EXPECT_FALSE(tp::parse_model(bad_schema, &why));
  EXPECT_NE(why.find("schema"), std::string::npos);
  std::string unsorted = good;
  unsorted.replace(unsorted.find("[1, 1024"), 8, "[1, 1");  // bytes no longer increasing
  EXPECT_FALSE(tp::parse_model(unsorted, &why));
}

TEST(Model, LoaderAcceptsAMatchingFileAndRefusesTheRest) {
  const std::string dir = temp_dir();
  setenv("DTMPI_CACHE_DIR", dir.c_str(), 1);
  dtmpi::runtime::reload_config();  // the configuration is read once
  // missing: defaults
  tp::load_model(1, "GPU A");
  EXPECT_TRUE(tp::current_model().defaults);
  // matching: loaded
  write_model_file(dir, tp::to_json(measured("GPU A")), "GPU A");
  tp::load_model(1, "GPU A");
  EXPECT_FALSE(tp::current_model().defaults);
  EXPECT_EQ(tp::current_model().host, "testhost");
  // measured on another GPU (a file renamed by hand): refused
  write_model_file(dir, tp::to_json(measured("GPU B")), "GPU A");
  tp::load_model(1, "GPU A");
  EXPECT_TRUE(tp::current_model().defaults);
  // another library version: refused
  tp::Model old = measured("GPU A");
  old.library_version = "0.0.1";
  write_model_file(dir, tp::to_json(old), "GPU A");
  tp::load_model(1, "GPU A");
  EXPECT_TRUE(tp::current_model().defaults);
  // corrupt: refused
  write_model_file(dir, "{ not json", "GPU A");
  tp::load_model(1, "GPU A");
  EXPECT_TRUE(tp::current_model().defaults);
  unsetenv("DTMPI_CACHE_DIR");
  dtmpi::runtime::reload_config();
}

TEST(Model, PredictionsFollowTheTerms) {
  tp::Model m = tp::default_model();
  tp::Shape s;
  s.bytes = 64 << 20;
  s.block = 4096;
  s.ipc = true;
  auto p = tp::predict(m, s, 2 << 20);
  for (double t : p.seconds) EXPECT_GT(t, 0);
  // a peer copy 100x faster than any host path: the device method wins big messages
  m.ipc = line(1e-6, 1e13);
  EXPECT_EQ(tp::predict(m, s, 2 << 20).best, tp::Method::kDevice);
  // without IPC and with slow copies, small messages go one-shot
  s.ipc = false;
  s.bytes = 1024;
  s.block = 8;
  EXPECT_EQ(tp::predict(m, s, 2 << 20).best, tp::Method::kOneShot);
  // multi-message methods are not candidates when not allowed
  s.multi = false;
  s.bytes = 64 << 20;
  auto q = tp::predict(m, s, 2 << 20);
  EXPECT_LT(q.seconds[static_cast<int>(tp::Method::kPipelined)], 0);
  EXPECT_LT(q.seconds[static_cast<int>(tp::Method::kDevice)], 0);
}

TEST(Model, MeasuredFileFromDtmpiMeasure) {
  // set by CTest after `dtmpi-measure --quick` ran (host terms on CPU machines)
  const char* dir = std::getenv("DTMPI_TEST_MODEL_DIR");
  if (!dir) GTEST_SKIP() << "DTMPI_TEST_MODEL_DIR not set";
  setenv("DTMPI_CACHE_DIR", dir, 1);
  dtmpi::runtime::reload_config();
  tp::load_model(1, "");
  EXPECT_FALSE(tp::current_model().defaults) << "dtmpi-measure's file was not accepted";
  EXPECT_GE(tp::current_model().mpi.bytes.size(), 7u);
  EXPECT_EQ(tp::current_model().mpi.bytes.back(), 67108864.0);
  // measured on a loaded CI machine (ctest -j, two cores): 1-byte latencies
  // spike to milliseconds when ranks are descheduled, so only the largest
  // size, which takes several milliseconds anyway, is compared with the smallest
  for (double b : tp::current_model().mpi.bytes) EXPECT_GT(tp::current_model().mpi.at(b), 0.0) << b << " bytes";
  EXPECT_GT(tp::current_model().mpi.at(67108864.0), tp::current_model().mpi.at(1));
  unsetenv("DTMPI_CACHE_DIR");
  dtmpi::runtime::reload_config();
}
