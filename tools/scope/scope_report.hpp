// What dtmpi-scope prints: one line per benchmark as it finishes (median time
// and bandwidth, min, max, spread over the repetitions, or why it was
// skipped), progress on stderr, and at the end the tables: bandwidth next to
// the hardware's nominal figures, the method next to plain cudaMemcpy + wall
// clock, the CPU cost of calls, what dtmpi adds.
#pragma once
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace dtmpi::scope {

struct Result {
  std::string name;      // Google Benchmark's full name
  std::string row;       // FAMILY/DIRECTION/PLACE
  std::string arg_name;  // "bytes", "params", "ops" ("" for none)
  int64_t arg = 0;
  int threads = 1;
  int reps = 0;
  double median_s = 0, min_s = 0, max_s = 0, spread = 0;  // per iteration
  double gbps = 0, gbps_min = 0, gbps_max = 0;            // bandwidth (1e9 B/s), transfer rows
  double items_per_s = 0;                                 // call rate, threaded rows
  double skew = -1;      // bidirectional rows on one GPU: |t1 - t2| / the longer (median), -1 none
  double restarts = 0;   // bidirectional rows: busy-waits lengthened (median per repetition)
  std::string error;     // "skipped: ..." or "error: ..."
  bool failed() const { return error.rfind("error:", 0) == 0; }
  bool skipped() const { return error.rfind("skipped:", 0) == 0; }
};

class Reporter : public benchmark::BenchmarkReporter {
 public:
  explicit Reporter(size_t expected) : expected_(expected) {}
  bool ReportContext(const Context&) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;
  const std::vector<Result>& results() const { return results_; }

 private:
  void finish(Result r);
  void progress();
  size_t expected_;
  std::vector<Result> results_;
  std::map<std::string, Result> pending_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  int last_tenth_ = -1;
  bool terminal_ = false;
};

// One line of a result (the per-benchmark summary).
std::string summary_line(const Result& r);
// The tables after the run (also written into the summary file).
void print_tables(FILE* f, const std::vector<Result>& results);
// The nominal figure a row is compared with (GB/s per direction, x2 for
// bidirectional rows) and its name; 0 where none applies or it is unknown.
double nominal_for(const std::string& row, std::string* what);

}  // namespace dtmpi::scope
