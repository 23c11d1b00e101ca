#include "src/plan_memo.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "src/call_counter.hpp"
#include "src/derived_forms.hpp"
#include "src/single_threaded.hpp"

namespace sj {
namespace {

constexpr size_t kEntriesPerHandle = 4;
std::atomic<int64_t> g_reuses{0};  // distinct (op, options, partners) kept per handle

struct MemoEntry {
  const Context* ctx = nullptr;
  sj_op op = SJ_OP_SPGEMM;
  sj_op_options options{};
  std::vector<std::weak_ptr<DerivedForms>> partners;  // operands 1.. (their handles' forms)
  int64_t calls = 0;
  std::shared_ptr<Plan> plan;
};

struct PlanMemo {
  // Guarded by the handle's DerivedForms::mutex (which a single-threaded process skips for
  // the lookup, src/single_threaded.hpp).
  std::vector<MemoEntry> entries;
};

// Options as read_options leaves them (normalised, see plan_memo.hpp): equal calls are equal
// bytes, so one fixed-size compare replaces fifteen field tests.
bool same_options(const sj_op_options& a, const sj_op_options& b) {
  static_assert(std::has_unique_object_representations_v<sj_op_options>, "no padding to compare");
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool matches(const MemoEntry& e, const Context& ctx, sj_op op, const OperandList& operands,
             const sj_op_options& options) {
  if (e.ctx != &ctx || e.op != op || e.partners.size() + 1 != operands.size()) return false;
  for (size_t i = 0; i < e.partners.size(); ++i) {
    const auto& d = operands[i + 1].derived;
    // Owner equivalence, without locking the weak pointer (two atomic operations per
    // partner per call): an expired partner still holds its control block, so no live
    // tensor's forms can share it.
    if (!d || e.partners[i].owner_before(d) || d.owner_before(e.partners[i])) return false;
  }
  return same_options(e.options, options);
}

// Whether the call-th call with the same operands plans again. The second does (its plan knows
// the operands repeat). Operations whose cost models amortise a conversion kept on a handle over
// its uses (SpMSpV's CSC copy, element-wise B^T) also re-plan at every power of two up to 2^16:
// the conversion is bought once the time lost without it reaches its cost (ski rental: at most
// about twice the better choice in hindsight), for ~16 plans over any number of calls.
bool replans_at(sj_op op, int64_t call) {
  if (call == 2) return true;
  if (op != SJ_OP_SPMSPV && op != SJ_OP_EWISE_MULT) return false;
  return call <= (int64_t(1) << 16) && (call & (call - 1)) == 0;
}

}  // namespace

std::shared_ptr<Plan> plan_for_dropin(const Context& ctx, sj_op op, const OperandList& operands,
                                      const sj_op_options& options) {
  // The request is built only when a plan must be made: a reused plan needs none. (Its copy
  // of `operands` borrows what they borrow.)
  auto make_plan = [&] { return std::make_shared<Plan>(ctx, OpRequest{op, operands, options}); };
  DerivedForms* home = operands.empty() ? nullptr : operands[0].derived.get();  // no shared_ptr copy
  bool all_handles = home != nullptr;
  for (const Tensor& t : operands) all_handles &= t.derived != nullptr;
  if (!all_handles) return make_plan();
  {
    LockUnlessSingleThreaded lock(home->mutex);  // the lookup starts no thread
    if (home->plan_memo) {
      auto& memo = *static_cast<PlanMemo*>(home->plan_memo.get());
      for (MemoEntry& e : memo.entries)
        if (matches(e, ctx, op, operands, options) && !replans_at(op, e.calls + 1)) {
          ++e.calls;
          count_add(g_reuses);
          return e.plan;
        }
    }
  }
  auto plan = make_plan();  // outside the lock: planning may take a while
  std::lock_guard lock(home->mutex);
  if (!home->plan_memo) home->plan_memo = std::make_shared<PlanMemo>();
  auto& memo = *static_cast<PlanMemo*>(home->plan_memo.get());
  for (MemoEntry& e : memo.entries)
    if (matches(e, ctx, op, operands, options)) {
      if (replans_at(op, e.calls + 1)) e.plan = plan;
      ++e.calls;
      return plan;
    }
  MemoEntry e;
  e.ctx = &ctx;
  e.op = op;
  e.options = options;
  for (size_t i = 1; i < operands.size(); ++i) e.partners.push_back(operands[i].derived);
  e.calls = 1;
  e.plan = plan;
  if (memo.entries.size() >= kEntriesPerHandle) memo.entries.erase(memo.entries.begin());
  memo.entries.push_back(std::move(e));
  return plan;
}

int64_t dropin_plan_reuses() { return g_reuses.load(std::memory_order_relaxed); }

}  // namespace sj
