#include "src/iteration_graph.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "src/error.hpp"

namespace sj::einsum {

std::vector<std::vector<int>> IterationGraph::shortest_supersequences(const std::vector<std::vector<int>>& seqs,
                                                                      size_t limit) {
  // Breadth-first over progress vectors; at each step emit a symbol that is next in some
  // sequence and advance every sequence whose next symbol it is (always optimal for SCS).
  using State = std::vector<int>;
  struct Node {
    State progress;
    std::vector<int> word;
  };
  std::vector<Node> frontier{{State(seqs.size(), 0), {}}};
  auto done = [&](const State& s) {
    for (size_t i = 0; i < seqs.size(); ++i)
      if (s[i] < static_cast<int>(seqs[i].size())) return false;
    return true;
  };
  std::vector<std::vector<int>> out;
  for (int step = 0; step < 16 && out.empty(); ++step) {
    std::vector<Node> next;
    std::set<std::pair<State, std::vector<int>>> seen;
    for (auto& n : frontier) {
      if (done(n.progress)) {
        out.push_back(n.word);
        continue;
      }
      std::set<int> symbols;
      for (size_t i = 0; i < seqs.size(); ++i)
        if (n.progress[i] < static_cast<int>(seqs[i].size())) symbols.insert(seqs[i][n.progress[i]]);
      for (int c : symbols) {
        Node m = n;
        m.word.push_back(c);
        for (size_t i = 0; i < seqs.size(); ++i)
          if (m.progress[i] < static_cast<int>(seqs[i].size()) && seqs[i][m.progress[i]] == c) ++m.progress[i];
        if (seen.insert({m.progress, m.word}).second) next.push_back(std::move(m));
      }
    }
    if (!out.empty()) break;
    if (next.size() > 4096) next.resize(4096);  // bounded work for pathological inputs
    frontier = std::move(next);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > limit) out.resize(limit);
  return out;
}

bool IterationGraph::admits(const std::vector<int>& order) const {
  for (auto& c : constraints) {
    size_t k = 0;
    for (int v : c) {
      while (k < order.size() && order[k] != v) ++k;
      if (k == order.size()) return false;
      ++k;
    }
  }
  return true;
}

bool IterationGraph::output_mode(const std::vector<int>& order, OutputMode* mode) const {
  if (!sparse_output) {
    *mode = OutputMode::Dense;
    return true;
  }
  std::map<int, int> first;
  for (int k = static_cast<int>(order.size()) - 1; k >= 0; --k) first[order[k]] = k;
  int first_reduction = static_cast<int>(order.size());
  for (auto& [v, k] : first)
    if (std::find(output_levels.begin(), output_levels.end(), v) == output_levels.end())
      first_reduction = std::min(first_reduction, k);
  const int r = static_cast<int>(output_levels.size());
  for (int l = 0; l < r; ++l)
    if (!first.count(output_levels[l])) return false;
  for (int l = 1; l < r; ++l)
    if (first[output_levels[l]] < first[output_levels[l - 1]]) return false;
  if (r == 0 || first[output_levels[r - 1]] < first_reduction) {
    *mode = OutputMode::Emit;
    return true;
  }
  if (r == 1 || first[output_levels[r - 2]] < first_reduction) {
    *mode = OutputMode::Where;
    return true;
  }
  return false;
}

std::vector<std::vector<int>> IterationGraph::loop_orders() const {
  std::vector<std::vector<int>> out;
  auto add = [&](const std::vector<std::vector<int>>& orders) {
    for (auto& o : orders) {
      OutputMode m;
      if (!admits(o) || !output_mode(o, &m)) continue;
      if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
    }
  };
  add(shortest_supersequences(constraints));
  if (sparse_output && !output_levels.empty()) {
    auto with_out = constraints;
    with_out.push_back(output_levels);
    add(shortest_supersequences(with_out));
  }
  return out;
}

std::string IterationGraph::describe(const Expression& e, const Term& t) const {
  std::string s;
  for (size_t f = 0; f < constraints.size(); ++f) {
    s += cat(f ? ";  " : "", t.factors[f].tensor, ": ");
    if (constraints[f].empty()) s += "(scalar)";
    for (size_t k = 0; k < constraints[f].size(); ++k) s += cat(k ? " -> " : "", e.index_names[constraints[f][k]]);
  }
  if (sparse_output) {
    s += cat(";  ", e.output.tensor, " (sparse out): ");
    for (size_t k = 0; k < output_levels.size(); ++k) s += cat(k ? " -> " : "", e.index_names[output_levels[k]]);
  }
  return s;
}

std::string order_text(const Expression& e, const std::vector<int>& order) {
  std::string s;
  for (size_t k = 0; k < order.size(); ++k) s += cat(k ? "," : "", e.index_names[order[k]]);
  return s;
}

}  // namespace sj::einsum
