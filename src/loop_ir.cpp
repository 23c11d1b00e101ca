#include "src/loop_ir.hpp"

#include <algorithm>

#include "src/einsum_format.hpp"
#include "src/error.hpp"

namespace sj::einsum {

LoopNest LoopNest::build(const Expression& e, const Term& term, const std::vector<FormatSpec>& formats,
                         const std::vector<int>& out_indices, const std::vector<int>& order, OutputMode mode,
                         SearchKind search) {
  LoopNest n;
  n.factor_formats = formats;
  for (auto& f : term.factors) n.factor_operand.push_back(e.operand_of(f));
  n.mode = mode;
  n.out_indices = out_indices;
  const int depth = static_cast<int>(order.size());
  n.loops.resize(depth);
  std::vector<int> first(e.index_names.size(), -1), count(e.index_names.size(), 0);
  for (int k = 0; k < depth; ++k) {
    if (first[order[k]] < 0) first[order[k]] = k;
    ++count[order[k]];
  }
  for (int k = 0; k < depth; ++k) {
    Loop& lp = n.loops[k];
    lp.index = order[k];
    lp.kind = first[order[k]] != k ? LoopKind::Forsame : count[order[k]] > 1 ? LoopKind::Forsome : LoopKind::Forall;
    lp.search_kind = search;
  }
  // Each factor binds its levels at the earliest positions that keep its level order.
  for (size_t f = 0; f < term.factors.size(); ++f) {
    const Access& a = term.factors[f];
    const FormatSpec& spec = formats[f];
    int k = 0;
    for (int l = 0; l < spec.order; ++l) {
      int v = a.indices[spec.mode_order[l]];
      while (k < depth && order[k] != v) ++k;
      if (k == depth) fail(SJ_ERR_INTERNAL, "loop order ", order_text(e, order), " does not admit ", a.tensor);
      LevelRef r{static_cast<int>(f), l};
      Loop& lp = n.loops[k];
      if (spec.kinds[l] == LevelKind::Dense) lp.locate.push_back(r);
      else if (lp.kind == LoopKind::Forsame) lp.search.push_back(r);
      else lp.iterate.push_back(r);
      ++k;
    }
  }
  if (mode == OutputMode::Emit) {
    n.emit_after = -1;
    for (int v : out_indices) n.emit_after = std::max(n.emit_after, first[v]);
  } else if (mode == OutputMode::Where) {
    n.where_at = 0;
    for (size_t l = 0; l + 1 < out_indices.size(); ++l) n.where_at = std::max(n.where_at, first[out_indices[l]] + 1);
  }
  return n;
}

bool LoopNest::has_search() const {
  for (auto& l : loops)
    if (!l.search.empty()) return true;
  return false;
}

namespace {

std::string refs(const Expression& e, const Term& t, const std::vector<LevelRef>& rs) {
  std::string s;
  for (size_t i = 0; i < rs.size(); ++i) s += cat(i ? " " : "", t.factors[rs[i].factor].tensor, ".", rs[i].level);
  return s;
}

std::string loop_line(const Expression& e, const Term& t, const Loop& lp, const LoopNest& n) {
  const char* kind = lp.kind == LoopKind::Forall ? "forall" : lp.kind == LoopKind::Forsome ? "forsome" : "forsame";
  std::string s = cat(kind, " ", e.index_names[lp.index], ":");
  if (!lp.iterate.empty()) s += cat(lp.iterate.size() > 1 ? " coiterate " : " iterate ", refs(e, t, lp.iterate));
  if (!lp.search.empty())
    s += cat(" search ", refs(e, t, lp.search), lp.search_kind == SearchKind::Binary ? " (binary)" : " (galloping)");
  if (!lp.locate.empty()) s += cat(" locate ", refs(e, t, lp.locate));
  if (lp.iterate.empty() && lp.search.empty() && lp.kind != LoopKind::Forsame) s += " range";
  return s;
}

}  // namespace

std::string LoopNest::print(const Expression& e, const Term& t) const {
  std::string out;
  std::string product;
  for (size_t f = 0; f < t.factors.size(); ++f) product += cat(f ? " * " : "", t.factors[f].tensor);
  const std::string target = Expression::access_text(e, e.output);
  int depth = 0;
  auto line = [&](const std::string& s) { out += std::string(2 * depth + 4, ' ') + s + "\n"; };
  for (size_t k = 0; k <= loops.size(); ++k) {
    if (mode == OutputMode::Where && static_cast<int>(k) == where_at) {
      const std::string w = e.index_names[out_indices.back()];
      line(cat("where (workspace w(", w, "), dense 1-D)"));
      ++depth;
      line(cat("consumer: forall ", w, " in w (sorted): ", target, " = w(", w, ")"));
      line("producer:");
      ++depth;
    }
    if (k == loops.size()) {
      const char* how = mode == OutputMode::Dense ? "+=" : mode == OutputMode::Emit ? "+= (emit)" : "";
      if (mode == OutputMode::Where) line(cat("w(", e.index_names[out_indices.back()], ") += ", product));
      else line(cat(target, " ", how, " ", product));
      break;
    }
    line(loop_line(e, t, loops[k], *this));
    ++depth;
  }
  if (mode == OutputMode::Emit && emit_after >= 0)
    out += std::string(4, ' ') + cat("(the coordinate is complete after loop ", emit_after + 1, " (",
                                     e.index_names[loops[emit_after].index], "): emitted once, in order)\n");
  return out;
}

std::string LoopNest::signature(const Expression& e, const Term& t) const {
  std::string s;
  for (auto& lp : loops) s += loop_line(e, t, lp, *this) + ";";
  for (size_t f = 0; f < factor_formats.size(); ++f) s += cat(t.factors[f].tensor, "=", format_text(factor_formats[f]), ";");
  s += cat("mode=", static_cast<int>(mode), ";emit=", emit_after, ";where=", where_at, ";presence=", presence, ";out=");
  for (int v : out_indices) s += e.index_names[v] + ",";
  return s;
}

}  // namespace sj::einsum
