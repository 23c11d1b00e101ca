// Matrix Market (.mtx) reader and writer, plus the small text helpers the FROSTT reader
// shares with it (whole-file reads, replace-by-rename writes, line and number scanning).
//
// Reader behaviour, decided once here:
//  - banner keywords are case-insensitive; object "matrix"; format coordinate | array;
//    field real (alias "double") | integer | pattern; symmetry general | symmetric |
//    skew-symmetric. complex and hermitian are refused with SJ_ERR_UNSUPPORTED.
//  - symmetric / skew-symmetric entries may sit in either triangle; each off-diagonal entry
//    is followed by its mirror (negated for skew). A nonzero diagonal entry in a skew file
//    is an error; an explicit zero there is kept once.
//  - array files become coordinates with every stored entry (zeros included), column-major
//    order, mirrored like coordinate files.
//  - numbers: optional leading '+', Fortran exponents (".39E+01", "1.5D+03"); "inf" and
//    "nan" are accepted so that every finite or infinite double the writer emits reads back
//    (NaN payloads are not kept). Magnitudes beyond double range become +-inf or 0, as with
//    strtod. Integer-field values must be integers (kept as double: exact up to 2^53).
//    Tokens longer than 400 characters are not numbers.
//  - comment lines ('%') and blank lines may appear anywhere after the banner; CRLF is fine.
//  - every malformed input throws sj::Error "<name>:<line>: <what>"; header numbers never
//    drive an allocation larger than the text itself could fill.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "src/coo.hpp"

namespace sj {

struct MatrixMarketInfo {
  bool coordinate = true;  // false for the dense "array" format
  std::string field;       // real | integer | pattern
  std::string symmetry;    // general | symmetric | skew-symmetric
  int64_t stored_entries = 0;  // entries in the file, before symmetric expansion
};

// Reads a whole file (SJ_ERR_IO when it cannot be opened or read, SJ_ERR_PARSE when
// malformed). Entries come back in file order; duplicates are kept (the caller sums them).
CooTensor read_matrix_market(const std::string& path, MatrixMarketInfo* info = nullptr);
CooTensor parse_matrix_market(std::string_view text, std::string_view name_for_errors,
                              MatrixMarketInfo* info = nullptr);

// Writes an order-1 (as n x 1) or order-2 tensor as "coordinate real general" (or "pattern
// general"), 1-based, values in shortest round-trip form. The file appears at `path` only
// when completely written (temporary file + rename).
void write_matrix_market(const CooTensor& t, const std::string& path, bool pattern = false);

// Text helpers shared by the file readers and writers (matrix_market.cpp, frostt.cpp).
namespace textio {

// The whole file in one read. SJ_ERR_IO "<path>: <strerror>" when it cannot be opened or
// read (a missing file, a folder, no permission).
std::string read_file(const std::string& path);

// Writes `content` to a fresh temporary file in the folder of `path`, then renames it over
// `path`; on any failure the temporary is removed and SJ_ERR_IO is thrown.
void replace_file(const std::string& path, std::string_view content);

// Walks text line by line: '\n' ends a line, a trailing '\r' is dropped, the last line may
// lack its '\n'. line_no is 1-based and names the line last returned.
struct LineCursor {
  std::string_view text;
  size_t pos = 0;
  int64_t line_no = 0;
  bool next(std::string_view* line);
};

// Fills out[0..] with up to `max` whitespace-separated tokens (space, tab, \r, \v, \f) and
// returns how many the line holds, capped at max + 1 (so "more than max" is visible).
int split_tokens(std::string_view line, std::string_view* out, int max);

enum class NumStatus { ok, malformed, out_of_range };
// Decimal integer, optional sign ('+' or '-'), nothing else.
NumStatus parse_int64(std::string_view token, int64_t* out);
// Decimal real as described above (Fortran 'D' exponents, '+', inf/nan).
NumStatus parse_real(std::string_view token, double* out);

// A token for an error message: quoted, control bytes escaped, long ones shortened.
std::string quote(std::string_view token);

// Checks that a tensor can be written as a file of `kind` (order 1..max_order, coordinate
// arrays as long as the values, coordinates inside dims): SJ_ERR_INVALID_ARGUMENT for the
// order, SJ_ERR_INVALID_TENSOR for the rest, so that every written file reads back.
void check_writable(const CooTensor& t, const std::string& path, int max_order, const char* kind);

// Appends the shortest text that reads back to exactly `v`.
void append_real(std::string* out, double v);
void append_int(std::string* out, int64_t v);

}  // namespace textio
}  // namespace sj
