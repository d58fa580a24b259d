// dtmpi-measure's reading of dtmpi-scope's results (tools/scope/scope_results):
// the naive/ rows become model curves in seconds, only complete rows count,
// another host or GPU model is refused with the reason, Google Benchmark's
// NaN/Infinity numbers parse. No MPI, no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/json.hpp"
#include "scope/scope_results.hpp"

namespace sc = dtmpi::scope;

namespace {

// One row's entries as dtmpi-scope writes them: every repetition, then the
// aggregates (median in us, spread as a fraction); `failed_at`: a size whose
// runs failed.
std::string row_json(const std::string& row, const std::vector<long long>& sizes, double us_per_mib,
                     long long failed_at = -1) {
  std::string out;
  for (long long s : sizes) {
    const std::string name = row + "/bytes:" + std::to_string(s) + "/manual_time";
    const double us = 2.0 + us_per_mib * static_cast<double>(s) / (1 << 20);
    auto add = [&](const std::string& e) { out += (out.empty() ? "" : ",\n") + e; };
    if (s == failed_at) {
      add("{\"name\": \"" + name + "\", \"run_name\": \"" + name + "\", \"run_type\": \"iteration\", "
          "\"error_occurred\": true, \"error_message\": \"error: cudaMemcpyAsync: out of memory\"}");
      continue;
    }
    for (int r = 0; r < 3; ++r)
      add("{\"name\": \"" + name + "\", \"run_name\": \"" + name + "\", \"run_type\": \"iteration\", "
          "\"repetitions\": 3, \"repetition_index\": " + std::to_string(r) + ", \"iterations\": 100, "
          "\"real_time\": " + std::to_string(us * (1 + 0.01 * r)) + ", \"cpu_time\": 1, \"time_unit\": \"us\", "
          "\"bytes_per_second\": Infinity, \"skew\": NaN}");
    add("{\"name\": \"" + name + "_median\", \"run_name\": \"" + name + "\", \"run_type\": \"aggregate\", "
        "\"aggregate_name\": \"median\", \"aggregate_unit\": \"time\", \"real_time\": " + std::to_string(us) +
        ", \"time_unit\": \"us\"}");
    add("{\"name\": \"" + name + "_spread\", \"run_name\": \"" + name + "\", \"run_type\": \"aggregate\", "
        "\"aggregate_name\": \"spread\", \"aggregate_unit\": \"percentage\", \"real_time\": 0.02, \"cpu_time\": 0}");
  }
  return out;
}

std::vector<long long> powers_of_4(int n) {
  std::vector<long long> v;
  for (long long s = 1; static_cast<int>(v.size()) < n; s *= 4) v.push_back(s);
  return v;
}

std::string results(const std::string& host, const std::string& gpu, const std::string& rows) {
  return "{\"context\": {\"date\": \"x\", \"host_name\": \"" + host + "\", \"dtmpi_scope_format\": \"1\", "
         "\"dtmpi_host\": \"" + host + "\", \"dtmpi_gpu\": \"" + gpu + "\", \"caches\": [{\"type\": \"Data\"}]},\n"
         "\"benchmarks\": [" + rows + "]}";
}

}  // namespace

TEST(ScopeResults, CompleteNaiveRowsBecomeCurvesInSeconds) {
  const auto sizes = powers_of_4(14);  // 1 B .. 64 MiB
  const std::string rows = row_json("naive/pinned/d2h/gpu0", sizes, 40) + ",\n" +
                           row_json("naive/pinned/h2d/gpu0", sizes, 45) + ",\n" +
                           row_json("pinned/h2d/gpu0", sizes, 38) + ",\n" +  // the method's row: not the model's
                           row_json("naive/peer/d2d/gpu1-gpu0", sizes, 3);
  sc::ModelTerms t;
  std::string why;
  ASSERT_TRUE(sc::read_model_terms(results("node7", "NVIDIA H100 80GB HBM3", rows), "node7", "NVIDIA H100 80GB HBM3",
                                   0, 1, t, &why)) << why;
  ASSERT_EQ(t.d2h.bytes.size(), sizes.size());
  ASSERT_EQ(t.h2d.bytes.size(), sizes.size());
  ASSERT_EQ(t.ipc.bytes.size(), sizes.size());
  EXPECT_EQ(t.ipc_row, "naive/peer/d2d/gpu1-gpu0");
  EXPECT_DOUBLE_EQ(t.d2h.bytes.front(), 1);
  EXPECT_DOUBLE_EQ(t.d2h.bytes.back(), 64.0 * 1024 * 1024);
  // the median aggregate, in seconds (not a repetition's time)
  EXPECT_NEAR(t.h2d.seconds.back(), (2.0 + 45 * 64) * 1e-6, 1e-12);
  EXPECT_NEAR(t.d2h.seconds.front(), (2.0 + 40.0 / (1 << 20)) * 1e-6, 1e-12);
  EXPECT_DOUBLE_EQ(t.d2h.spread[3], 0.02);
  EXPECT_EQ(t.sizes, static_cast<int>(sizes.size()));
}

TEST(ScopeResults, SameGpuTakesTheCopyWithinTheGpu) {
  const auto sizes = powers_of_4(14);
  const std::string rows = row_json("naive/device/d2d/gpu0", sizes, 1);
  sc::ModelTerms t;
  std::string why;
  ASSERT_TRUE(sc::read_model_terms(results("h", "G", rows), "h", "G", 0, 0, t, &why)) << why;
  EXPECT_EQ(t.ipc_row, "naive/device/d2d/gpu0");
  EXPECT_EQ(t.ipc.bytes.size(), sizes.size());
  EXPECT_TRUE(t.d2h.empty());
  EXPECT_TRUE(t.h2d.empty());
}

TEST(ScopeResults, IncompleteRowsAreNotUsed) {
  const auto sizes = powers_of_4(14);
  const std::string rows = row_json("naive/pinned/d2h/gpu0", sizes, 40, /*failed_at=*/1024) + ",\n" +
                           row_json("naive/pinned/h2d/gpu0", powers_of_4(8), 45) + ",\n" +  // only up to 16 KiB
                           row_json("naive/peer/d2d/gpu1-gpu0", sizes, 3);
  sc::ModelTerms t;
  std::string why;
  ASSERT_TRUE(sc::read_model_terms(results("h", "G", rows), "h", "G", 0, 1, t, &why)) << why;
  EXPECT_TRUE(t.d2h.empty()) << "a failed size";
  EXPECT_TRUE(t.h2d.empty()) << "not up to 64 MiB";
  EXPECT_FALSE(t.ipc.empty());
  // another GPU's rows are not this GPU's
  sc::ModelTerms u;
  EXPECT_FALSE(sc::read_model_terms(results("h", "G", rows), "h", "G", 1, 0, u, &why));
  EXPECT_NE(why.find("complete"), std::string::npos) << why;
}

TEST(ScopeResults, AnotherMachineOrNoScopeFileIsRefusedWithTheReason) {
  const std::string rows = row_json("naive/pinned/d2h/gpu0", powers_of_4(14), 40);
  sc::ModelTerms t;
  std::string why;
  EXPECT_FALSE(sc::read_model_terms(results("other", "G", rows), "h", "G", 0, 0, t, &why));
  EXPECT_NE(why.find("host 'other'"), std::string::npos) << why;
  EXPECT_FALSE(sc::read_model_terms(results("h", "NVIDIA H200", rows), "h", "G", 0, 0, t, &why));
  EXPECT_NE(why.find("GPU 'NVIDIA H200'"), std::string::npos) << why;
  EXPECT_FALSE(sc::read_model_terms("{\"context\": {}, \"benchmarks\": []}", "h", "G", 0, 0, t, &why));
  EXPECT_NE(why.find("not dtmpi-scope"), std::string::npos) << why;
  EXPECT_FALSE(sc::read_model_terms("[1, 2", "h", "G", 0, 0, t, &why));
  EXPECT_EQ(why, "not JSON");
}

TEST(ScopeResults, FileNameFollowsTheModelsAndJsonReadsGoogleBenchmarkNumbers) {
  EXPECT_EQ(sc::results_file_name("node 7", "NVIDIA H100 80GB HBM3"), "scope-node_7-NVIDIA_H100_80GB_HBM3.json");
  dtmpi::json::Value v;
  ASSERT_TRUE(dtmpi::json::parse("{\"a\": NaN, \"b\": -Infinity, \"c\": [1e3, \"x\\\"y\"]}", v));
  EXPECT_TRUE(std::isnan(dtmpi::json::field(v, "a", dtmpi::json::Value::kNumber)->number));
  EXPECT_TRUE(std::isinf(dtmpi::json::field(v, "b", dtmpi::json::Value::kNumber)->number));
  EXPECT_EQ(dtmpi::json::field(v, "c", dtmpi::json::Value::kArray)->items[1].text, "x\"y");
  EXPECT_FALSE(dtmpi::json::parse("{\"a\": 1,}", v));
}
