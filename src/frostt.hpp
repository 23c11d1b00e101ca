// FROSTT .tns tensors: one entry per line, "i j k ... value", 1-based coordinates.
//
// Reader behaviour: '#' comment lines and blank lines are skipped; the first entry fixes the
// order (fields - 1), every later entry must have the same; orders 1..4 are read, more gives
// SJ_ERR_UNSUPPORTED. dims[m] is the largest coordinate seen in mode m (the format has no
// header, so trailing empty slices are not recorded and a file with no entries is an error).
// Values are parsed like Matrix Market reals (see matrix_market.hpp). Entries come back in
// file order, duplicates kept. Malformed input throws sj::Error "<name>:<line>: <what>".
#pragma once
#include <string>
#include <string_view>

#include "src/coo.hpp"

namespace sj {

CooTensor read_frostt(const std::string& path);
CooTensor parse_frostt(std::string_view text, std::string_view name_for_errors);

// Writes an order 1..4 tensor, 1-based, values in shortest round-trip form; the file appears
// at `path` only when completely written (temporary file + rename).
void write_frostt(const CooTensor& t, const std::string& path);

}  // namespace sj
