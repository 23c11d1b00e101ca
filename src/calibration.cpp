#include "src/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "cache/kernel_key.hpp"
#include "cache/persistent_store.hpp"
#include "kernels/schedule.hpp"
#include "src/error.hpp"
#include "src/json_writer.hpp"
#include "src/logging.hpp"

namespace sj {
namespace {

constexpr int kCandidates = 3;       // the cheapest by model cost that are timed
constexpr int64_t kMinSample = 64;   // rows in a sample (all rows when fewer)
constexpr int64_t kMaxSample = 4096;

struct Memory {
  std::mutex mutex;
  std::unordered_map<uint64_t, sj_schedule> decisions;  // full key hash -> schedule
};
Memory& memory() {
  static Memory* m = new Memory;  // never destroyed: plans may outlive static destructors
  return *m;
}

int64_t log2_bucket(double v) { return v <= 0 ? -1 : static_cast<int64_t>(std::floor(std::log2(v))); }

cache::KernelKey bucket_key(const OpRequest& req, const PreparedOperands& p, const std::vector<MatrixStats>& stats) {
  std::vector<int64_t> f;
  for (const MatrixStats& s : stats) {
    f.push_back(log2_bucket(static_cast<double>(s.rows)));
    f.push_back(log2_bucket(static_cast<double>(s.cols)));
    f.push_back(log2_bucket(static_cast<double>(s.nnz)));
    f.push_back(s.rows > 0 ? log2_bucket(2 * 2 * s.row_mean * s.row_mean) : -2);  // half-log2 steps
    f.push_back(s.rows > 0 && s.row_mean > 0 ? log2_bucket(s.row_stddev / s.row_mean) : -2);
  }
  cache::KernelKey k = cache::KernelKey::make(cache::KeyKind::Plan);
  k.op = static_cast<uint8_t>(req.op);
  k.semiring = static_cast<uint8_t>(req.options.semiring);
  k.index = p.index_type;
  k.value = p.value_type;
  k.flags = static_cast<uint8_t>((req.options.transpose_a ? cache::kKeyTransposeA : 0) |
                                 (req.options.transpose_b ? cache::kKeyTransposeB : 0) |
                                 (req.options.dense_output ? cache::kKeyDenseOutput : 0) |
                                 (req.options.mask_complement ? cache::kKeyMaskComplement : 0));
  k.detail = cache::hash64(f.data(), f.size() * sizeof(int64_t));
  return k;
}

// Every `stride`-th row of a CSR matrix, as a new CSR matrix (same columns and types).
Tensor sample_rows(const Tensor& csr, int64_t stride, const Allocator& alloc) {
  const int64_t rows = csr.dims[0], n = (rows + stride - 1) / stride;
  const int64_t* pos = csr.levels[1].pos.as<int64_t>();
  int64_t nnz = 0;
  for (int64_t r = 0; r < n; ++r) nnz += pos[r * stride + 1] - pos[r * stride];
  Tensor s = make_compressed_matrix(alloc, true, n, csr.dims[1], nnz, csr.index_type, csr.value_type);
  int64_t* sp = s.levels[1].pos.as_mut<int64_t>();
  const size_t is = index_size(csr.index_type), vs = value_size(csr.value_type);
  auto* sc = static_cast<char*>(s.levels[1].crd.mutable_data());
  auto* sv = static_cast<char*>(s.values.mutable_data());
  const auto* c = static_cast<const char*>(csr.levels[1].crd.data());
  const auto* v = static_cast<const char*>(csr.values.data());
  sp[0] = 0;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t b = pos[r * stride], len = pos[r * stride + 1] - b;
    if (len) {
      std::memcpy(sc + sp[r] * is, c + b * is, len * is);
      std::memcpy(sv + sp[r] * vs, v + b * vs, len * vs);
    }
    sp[r + 1] = sp[r] + len;
  }
  return s;
}

// The request the candidates are timed on: A's (and M's) rows sampled, A already transposed.
struct Sample {
  OpRequest req;
  int64_t rows = 0, sampled = 0;
};
Sample make_sample(const OpRequest& req, const PreparedOperands& p, const Allocator& alloc) {
  Sample s;
  s.req = req;
  const bool masked = req.op == SJ_OP_SPGEMM_MASKED;
  if (req.op != SJ_OP_SPGEMM && !masked && req.op != SJ_OP_SPMSPV) return s;  // whole operands
  const size_t a = masked ? 1 : 0;
  s.rows = p.operands[a].dims[0];
  const int64_t want = std::min(s.rows, std::clamp<int64_t>(s.rows / 8, kMinSample, kMaxSample));
  if (want <= 0 || want >= s.rows) return s;
  const int64_t stride = s.rows / want;
  s.req.operands.set(a, sample_rows(p.operands[a], stride, alloc));
  if (masked) s.req.operands.set(0, sample_rows(p.operands[0], stride, alloc));
  s.req.options.transpose_a = 0;
  s.sampled = s.req.operands[a].dims[0];
  return s;
}

double time_us(const ScheduleImpl& impl, const Sample& s, const PreparedOperands& sp, const PlanInputs& full,
               const void* state) {
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {  // a warm-up, then the best of two
    const auto t0 = std::chrono::steady_clock::now();
    Tensor out = impl.run(ExecInputs{s.req, sp, full.ctx, state});
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) best = std::min(best, us);
  }
  return best;
}

std::string json_of(const cache::KernelKey& k, const char* source, const Sample* s,
                    const std::vector<std::pair<sj_schedule, double>>& timings, sj_schedule choice) {
  JsonWriter w;
  char bucket[32];
  std::snprintf(bucket, sizeof bucket, "%016llx", static_cast<unsigned long long>(k.detail));
  w.begin_object().field("bucket", std::string_view(bucket)).field("source", std::string_view(source));
  if (s) {
    w.field("rows", s->rows).field("sample_rows", s->sampled ? s->sampled : s->rows);
    w.key("timings_us").begin_object();
    for (auto& [sc, us] : timings) w.field(std::string(to_string(sc)), us);
    w.end_object();
  }
  w.field("choice", to_string(choice)).end_object();
  return w.str();
}

int index_of(sj_schedule s, const std::vector<const ScheduleImpl*>& impls, const std::vector<bool>& applicable) {
  for (size_t i = 0; i < impls.size(); ++i)
    if (impls[i]->schedule() == s && applicable[i]) return static_cast<int>(i);
  return -1;
}

}  // namespace

CalibrationOutcome calibrate_or_recall(const PlanInputs& in, const std::vector<const ScheduleImpl*>& impls,
                                       const std::vector<double>& costs, const std::vector<bool>& applicable) {
  CalibrationOutcome out;
  const cache::KernelKey key = bucket_key(in.req, in.prepared, in.stats);
  const uint64_t h = key.hash();
  // Remembered: this process first, then the cache folder.
  {
    std::lock_guard lock(memory().mutex);
    auto it = memory().decisions.find(h);
    if (it != memory().decisions.end() && (out.chosen = index_of(it->second, impls, applicable)) >= 0) {
      out.explain_json = json_of(key, "memory", nullptr, {}, it->second);
      return out;
    }
  }
  // The folder only when calibrating: a plain plan never opens (or creates) the cache folder.
  auto store = in.ctx.config.disable_disk_cache || !in.req.options.calibrate ? nullptr : in.ctx.store();
  if (store && store->enabled()) {
    if (auto payload = store->load(key)) {
      auto s = parse_schedule(std::string_view(reinterpret_cast<const char*>(payload->data()), payload->size()));
      if (s && (out.chosen = index_of(*s, impls, applicable)) >= 0) {
        std::lock_guard lock(memory().mutex);
        memory().decisions[h] = *s;
        out.explain_json = json_of(key, "disk", nullptr, {}, *s);
        return out;
      }
    }
  }
  if (!in.req.options.calibrate) return out;

  // Measure the cheapest few by model cost.
  std::vector<int> order;
  for (size_t i = 0; i < impls.size(); ++i)
    if (applicable[i]) order.push_back(static_cast<int>(i));
  std::sort(order.begin(), order.end(), [&](int a, int b) { return costs[a] < costs[b]; });
  if (order.size() > kCandidates) order.resize(kCandidates);
  if (order.empty()) return out;
  const Sample sample = make_sample(in.req, in.prepared, in.ctx.allocator);
  const PreparedOperands sp = prepare(sample.req, in.ctx.allocator, in.prepared.index_type);
  PlanInputs sin{sample.req, sp, in.stats, in.flops, in.ctx};
  std::vector<std::pair<sj_schedule, double>> timings;
  double best = 1e300;
  for (int i : order) {
    try {
      std::string source;
      double build_ms = 0;
      auto state = impls[i]->prepare(sin, &source, &build_ms);
      const double us = time_us(*impls[i], sample, sp, in, state.get());
      timings.push_back({impls[i]->schedule(), us});
      if (us < best) best = us, out.chosen = i;
    } catch (const Error& e) {
      in.ctx.logger->warn("calibration: {} failed on the sample ({}); not a candidate",
                          to_string(impls[i]->schedule()), e.what());
    }
  }
  if (out.chosen < 0) return out;
  const sj_schedule choice = impls[out.chosen]->schedule();
  {
    std::lock_guard lock(memory().mutex);
    memory().decisions[h] = choice;
  }
  if (store && store->enabled()) store->store(key, to_string(choice));
  out.explain_json = json_of(key, "measured", &sample, timings, choice);
  return out;
}

void forget_calibrations_for_testing() {
  std::lock_guard lock(memory().mutex);
  memory().decisions.clear();
}

}  // namespace sj
