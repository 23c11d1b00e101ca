#include "src/matrix_market.hpp"

#include <fcntl.h>
#include <locale.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>

#include "src/error.hpp"

namespace sj {
namespace textio {

namespace {

// Closes a descriptor on every path out of a function.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(SJ_ERR_IO, path, ": cannot open: ", std::strerror(errno));
  FdGuard guard{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) fail(SJ_ERR_IO, path, ": cannot stat: ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(SJ_ERR_IO, path, ": cannot read: ", std::strerror(EISDIR));

  // One read of the size fstat reports; then keep reading until EOF in case the file grew
  // or is not a regular file (a pipe, /dev/stdin).
  std::string data(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0, '\0');
  size_t got = 0;
  for (;;) {
    char probe[1 << 14];
    bool into_data = got < data.size();
    char* dst = into_data ? data.data() + got : probe;
    size_t room = into_data ? data.size() - got : sizeof probe;
    ssize_t n = ::read(fd, dst, room);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(SJ_ERR_IO, path, ": cannot read: ", std::strerror(errno));
    }
    if (n == 0) break;
    if (into_data) {
      got += static_cast<size_t>(n);
    } else {
      data.resize(got);
      data.append(probe, static_cast<size_t>(n));
      got = data.size();
    }
  }
  data.resize(got);
  return data;
}

void replace_file(const std::string& path, std::string_view content) {
  // A name unique within this process and, by the pid, across processes; O_EXCL makes sure
  // we never write through someone else's file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = cat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(SJ_ERR_IO, path, ": cannot create ", tmp, ": ", std::strerror(errno));

  auto give_up = [&](const char* what, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    fail(SJ_ERR_IO, path, ": ", what, ": ", std::strerror(err));
  };
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("cannot write", errno);
    }
    done += static_cast<size_t>(n);
  }
  // fsync so that a crash after the rename cannot leave an empty file under the real name.
  if (::fsync(fd) != 0 && errno != EINVAL) give_up("cannot sync", errno);
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) give_up("cannot close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) give_up("cannot rename temporary file", errno);
}

bool LineCursor::next(std::string_view* line) {
  if (pos >= text.size()) return false;
  size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) end = text.size();
  std::string_view l = text.substr(pos, end - pos);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  *line = l;
  pos = end + 1;
  ++line_no;
  return true;
}

int split_tokens(std::string_view line, std::string_view* out, int max) {
  int count = 0;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size()) break;
    size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (count == max) return max + 1;
    out[count++] = line.substr(start, i - start);
  }
  return count;
}

NumStatus parse_int64(std::string_view token, int64_t* out) {
  const char* b = token.data();
  const char* e = b + token.size();
  if (b != e && *b == '+') {
    ++b;
    if (b != e && *b == '-') return NumStatus::malformed;
  }
  if (b == e) return NumStatus::malformed;
  auto [p, ec] = std::from_chars(b, e, *out);
  if (ec == std::errc::invalid_argument || p != e) return NumStatus::malformed;
  if (ec == std::errc::result_out_of_range) return NumStatus::out_of_range;
  return NumStatus::ok;
}

namespace {

// strtod in the "C" locale, whatever the host program set: only used for magnitudes that
// from_chars reports as out of range, to get strtod's +-inf / 0 answer.
double strtod_c_locale(const char* s) {
  static locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  return c_locale ? ::strtod_l(s, nullptr, c_locale) : std::strtod(s, nullptr);
}

}  // namespace

NumStatus parse_real(std::string_view token, double* out) {
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (!token.empty() && (token.front() == '-' || token.front() == '+')) return NumStatus::malformed;
  }
  if (token.empty() || token.size() > 400) return NumStatus::malformed;
  // Fortran writes the exponent with D ("1.5D+03"); from_chars wants E.
  char buf[401];
  std::memcpy(buf, token.data(), token.size());
  for (size_t i = 0; i < token.size(); ++i)
    if (buf[i] == 'd' || buf[i] == 'D') buf[i] = 'e';
  const char* b = buf;
  const char* e = buf + token.size();
  // from_chars would also take "nan(...)"; the writer never emits it, the reader accepts it.
  auto [p, ec] = std::from_chars(b, e, *out, std::chars_format::general);
  if (ec == std::errc::invalid_argument || p != e) return NumStatus::malformed;
  if (ec == std::errc::result_out_of_range) {
    buf[token.size()] = '\0';
    *out = strtod_c_locale(buf);
  }
  return NumStatus::ok;
}

std::string quote(std::string_view token) {
  constexpr size_t kMax = 40;
  std::string s = "'";
  for (size_t i = 0; i < token.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x20 || c >= 0x7f) {
      static const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[c >> 4];
      s += hex[c & 15];
    } else {
      s += static_cast<char>(c);
    }
  }
  if (token.size() > kMax) s += "...";
  s += "'";
  return s;
}

void append_real(std::string* out, double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  out->append(buf, p);
}

void append_int(std::string* out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, p);
}

// The entry's coordinates must lie inside dims, or the file would not read back.
void check_writable(const CooTensor& t, const std::string& path, int max_order, const char* kind) {
  if (t.order < 1 || t.order > max_order)
    fail(SJ_ERR_INVALID_ARGUMENT, path, ": ", kind, " files hold tensors of order 1..", max_order,
         ", not ", t.order);
  for (int m = 0; m < t.order; ++m) {
    if (t.dims[m] < 0) fail(SJ_ERR_INVALID_TENSOR, path, ": dimension ", m, " is negative (", t.dims[m], ")");
    if (t.coords[m].size() != t.values.size())
      fail(SJ_ERR_INVALID_TENSOR, path, ": mode ", m, " has ", t.coords[m].size(), " coordinates for ",
           t.values.size(), " values");
  }
  for (int m = 0; m < t.order; ++m)
    for (size_t k = 0; k < t.values.size(); ++k)
      if (t.coords[m][k] < 0 || t.coords[m][k] >= t.dims[m])
        fail(SJ_ERR_INVALID_TENSOR, path, ": entry ", k, ": mode ", m, " coordinate ", t.coords[m][k],
             " out of range 0..", t.dims[m] - 1);
}

}  // namespace textio

namespace {

using textio::NumStatus;

enum class Field { real, integer, pattern };
enum class Symmetry { general, symmetric, skew };

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// An upper bound on how many entries `text` can hold when each needs at least
// `min_bytes` bytes (digits plus separator): header numbers never size a reservation past it.
int64_t entries_text_can_hold(std::string_view text, int64_t min_bytes) {
  return static_cast<int64_t>(text.size()) / min_bytes + 1;
}

class MatrixMarketParser {
 public:
  MatrixMarketParser(std::string_view text, std::string_view name) : name_(name) {
    // A UTF-8 byte order mark before the banner is harmless; skip it.
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    cur_.text = text;
  }

  CooTensor parse(MatrixMarketInfo* info) {
    read_banner();
    read_size_line();
    CooTensor t;
    t.order = 2;
    t.dims = {rows_, cols_, 0, 0};
    t.pattern = field_ == Field::pattern;
    if (coordinate_)
      read_coordinate_entries(&t);
    else
      read_array_entries(&t);
    if (info) {
      info->coordinate = coordinate_;
      info->field = field_ == Field::real ? "real" : field_ == Field::integer ? "integer" : "pattern";
      info->symmetry = symmetry_ == Symmetry::general     ? "general"
                       : symmetry_ == Symmetry::symmetric ? "symmetric"
                                                          : "skew-symmetric";
      info->stored_entries = declared_;
    }
    return t;
  }

 private:
  template <class... Args>
  [[noreturn]] void error(sj_status status, const Args&... parts) const {
    fail(status, name_, ":", std::max<int64_t>(cur_.line_no, 1), ": ", parts...);
  }
  template <class... Args>
  [[noreturn]] void parse_error(const Args&... parts) const {
    error(SJ_ERR_PARSE, parts...);
  }

  // Next line that is neither a comment nor blank; false at the end of the text.
  bool next_content_line(std::string_view* line) {
    while (cur_.next(line)) {
      size_t first = line->find_first_not_of(" \t\r\v\f");
      if (first == std::string_view::npos || (*line)[first] == '%') continue;
      return true;
    }
    return false;
  }

  void read_banner() {
    std::string_view line;
    if (!cur_.next(&line)) parse_error("empty file: expected the banner '%%MatrixMarket matrix ...'");
    std::string_view tok[5];
    int n = textio::split_tokens(line, tok, 5);
    if (n == 0 || lower(tok[0]) != "%%matrixmarket")
      parse_error("missing banner: the first line must start with '%%MatrixMarket'");
    if (n < 5)
      parse_error("incomplete banner: expected '%%MatrixMarket matrix <format> <field> <symmetry>'");
    if (n > 5) {
      std::string_view more[6];
      textio::split_tokens(line, more, 6);
      parse_error("unexpected ", textio::quote(more[5]), " after the banner's symmetry");
    }
    std::string object = lower(tok[1]), format = lower(tok[2]), field = lower(tok[3]),
                symmetry = lower(tok[4]);
    if (object != "matrix")
      parse_error("unknown object ", textio::quote(tok[1]), " (only 'matrix' is supported)");

    if (format == "coordinate")
      coordinate_ = true;
    else if (format == "array")
      coordinate_ = false;
    else
      parse_error("unknown format ", textio::quote(tok[2]), " (expected 'coordinate' or 'array')");

    if (field == "real" || field == "double")
      field_ = Field::real;
    else if (field == "integer")
      field_ = Field::integer;
    else if (field == "pattern")
      field_ = Field::pattern;
    else if (field == "complex")
      error(SJ_ERR_UNSUPPORTED, "complex matrices are not supported (real, integer and pattern are)");
    else
      parse_error("unknown field ", textio::quote(tok[3]), " (expected 'real', 'integer' or 'pattern')");

    if (symmetry == "general")
      symmetry_ = Symmetry::general;
    else if (symmetry == "symmetric")
      symmetry_ = Symmetry::symmetric;
    else if (symmetry == "skew-symmetric")
      symmetry_ = Symmetry::skew;
    else if (symmetry == "hermitian")
      error(SJ_ERR_UNSUPPORTED, "hermitian matrices are not supported (they need complex values)");
    else
      parse_error("unknown symmetry ", textio::quote(tok[4]),
                  " (expected 'general', 'symmetric' or 'skew-symmetric')");

    if (field_ == Field::pattern && !coordinate_)
      parse_error("'array pattern' is not a valid combination (pattern needs coordinates)");
    if (field_ == Field::pattern && symmetry_ == Symmetry::skew)
      parse_error("'pattern skew-symmetric' is not a valid combination (no values to negate)");
  }

  int64_t size_value(std::string_view tok, const char* what) const {
    int64_t v = 0;
    switch (textio::parse_int64(tok, &v)) {
      case NumStatus::malformed:
        parse_error("bad size line: ", what, " ", textio::quote(tok), " is not an integer");
      case NumStatus::out_of_range:
        error(SJ_ERR_OVERFLOW, "bad size line: ", what, " ", textio::quote(tok),
              " does not fit a 64-bit integer");
      case NumStatus::ok:
        break;
    }
    if (v < 0) parse_error("bad size line: negative ", what, " ", v);
    return v;
  }

  void read_size_line() {
    std::string_view line;
    if (!next_content_line(&line)) parse_error("missing size line after the banner");
    size_line_ = cur_.line_no;
    std::string_view tok[3];
    int want = coordinate_ ? 3 : 2;
    int n = textio::split_tokens(line, tok, want);
    if (n != want)
      parse_error("bad size line: expected ", coordinate_ ? "'rows cols entries'" : "'rows cols'",
                  ", found ", n > want ? "more than " : "", std::min(n, want), " number",
                  std::min(n, want) == 1 ? "" : "s");
    rows_ = size_value(tok[0], "rows");
    cols_ = size_value(tok[1], "cols");
    if (symmetry_ != Symmetry::general && rows_ != cols_)
      parse_error("a ", symmetry_ == Symmetry::symmetric ? "symmetric" : "skew-symmetric",
                  " matrix must be square, found ", rows_, " x ", cols_);
    if (coordinate_) {
      declared_ = size_value(tok[2], "entries");
      return;
    }
    // Array files store every entry of the stored triangle, column by column.
    // Counted in 128 bits: n (n + 1) / 2 may overflow 64 bits on its way to a result that fits.
    __int128 side = rows_, total = 0;
    if (symmetry_ == Symmetry::general)
      total = side * cols_;
    else if (symmetry_ == Symmetry::symmetric)
      total = side * (side + 1) / 2;
    else
      total = side * std::max<__int128>(side - 1, 0) / 2;
    bool overflow = total > std::numeric_limits<int64_t>::max();
    if (overflow)
      error(SJ_ERR_OVERFLOW, "array of ", rows_, " x ", cols_, " entries does not fit a 64-bit count");
    declared_ = static_cast<int64_t>(total);
  }

  // A 1-based index token checked against 1..limit; returns it 0-based.
  int64_t index_value(std::string_view tok, const char* what, int64_t limit) const {
    int64_t v = 0;
    switch (textio::parse_int64(tok, &v)) {
      case NumStatus::malformed:
        parse_error(what, " index ", textio::quote(tok), " is not an integer");
      case NumStatus::out_of_range:
        parse_error(what, " index ", textio::quote(tok), " out of range 1..", limit);
      case NumStatus::ok:
        break;
    }
    if (v < 1 || v > limit) parse_error(what, " index ", v, " out of range 1..", limit);
    return v - 1;
  }

  double value_of(std::string_view tok) const {
    if (field_ == Field::integer) {
      int64_t v = 0;
      switch (textio::parse_int64(tok, &v)) {
        case NumStatus::malformed:
          parse_error("value ", textio::quote(tok), " is not an integer (the field is 'integer')");
        case NumStatus::out_of_range:
          parse_error("integer value ", textio::quote(tok), " does not fit 64 bits");
        case NumStatus::ok:
          break;
      }
      return static_cast<double>(v);
    }
    double v = 0;
    if (textio::parse_real(tok, &v) != NumStatus::ok)
      parse_error("value ", textio::quote(tok), " is not a number");
    return v;
  }

  // Appends (i, j, v) and, for symmetric kinds, its mirror.
  void add(CooTensor* t, int64_t i, int64_t j, double v) const {
    if (symmetry_ == Symmetry::skew && i == j && v != 0)
      parse_error("skew-symmetric matrix has a nonzero diagonal entry (", i + 1, ", ", j + 1, ")");
    push(t, i, j, v);
    if (symmetry_ != Symmetry::general && i != j)
      push(t, j, i, symmetry_ == Symmetry::skew ? -v : v);
  }
  static void push(CooTensor* t, int64_t i, int64_t j, double v) {
    t->coords[0].push_back(i);
    t->coords[1].push_back(j);
    t->values.push_back(v);
  }

  void reserve(CooTensor* t, int64_t min_bytes_per_entry) const {
    int64_t n = std::min(declared_, entries_text_can_hold(cur_.text, min_bytes_per_entry));
    if (symmetry_ != Symmetry::general) n *= 2;
    t->coords[0].reserve(static_cast<size_t>(n));
    t->coords[1].reserve(static_cast<size_t>(n));
    t->values.reserve(static_cast<size_t>(n));
  }

  void reject_extra_entries() {
    std::string_view line;
    if (next_content_line(&line))
      parse_error("more entries than the ", declared_, " declared on line ", size_line_);
  }
  [[noreturn]] void too_few(int64_t got) const {
    parse_error("file ends after ", got, " of the ", declared_, " declared entries");
  }

  void read_coordinate_entries(CooTensor* t) {
    const bool pattern = field_ == Field::pattern;
    reserve(t, 4);  // "1 1\n"
    const int want = pattern ? 2 : 3;
    std::string_view line, tok[3];
    for (int64_t k = 0; k < declared_; ++k) {
      if (!next_content_line(&line)) too_few(k);
      int n = textio::split_tokens(line, tok, want);
      if (n > want) {
        std::string_view all[4];
        textio::split_tokens(line, all, 4);
        if (pattern)
          parse_error("pattern entry has a value column ", textio::quote(all[2]),
                      " (pattern files hold only 'row col')");
        parse_error("unexpected ", textio::quote(all[3]), " after the entry's value");
      }
      if (n < want) {
        if (n == 1) parse_error("missing column index", pattern ? "" : " and value");
        parse_error("missing value");
      }
      int64_t i = index_value(tok[0], "row", rows_);
      int64_t j = index_value(tok[1], "column", cols_);
      add(t, i, j, pattern ? 1.0 : value_of(tok[2]));
    }
    reject_extra_entries();
  }

  void read_array_entries(CooTensor* t) {
    reserve(t, 2);  // "0\n"
    // Column-major over the stored part: all rows (general), rows j.. (symmetric), rows j+1..
    // (skew: the diagonal is zero and not stored).
    auto first_row = [&](int64_t j) {
      return symmetry_ == Symmetry::general ? 0 : symmetry_ == Symmetry::symmetric ? j : j + 1;
    };
    int64_t j = 0, i = first_row(0);
    std::string_view line, tok[1];
    for (int64_t k = 0; k < declared_; ++k) {
      while (i >= rows_) i = first_row(++j);  // declared_ > 0 guarantees a next column
      if (!next_content_line(&line)) too_few(k);
      int n = textio::split_tokens(line, tok, 1);
      if (n > 1) {
        std::string_view all[2];
        textio::split_tokens(line, all, 2);
        parse_error("unexpected ", textio::quote(all[1]), " after the value (array files hold one value per line)");
      }
      add(t, i, j, value_of(tok[0]));
      ++i;
    }
    reject_extra_entries();
  }

  std::string_view name_;
  textio::LineCursor cur_;
  bool coordinate_ = true;
  Field field_ = Field::real;
  Symmetry symmetry_ = Symmetry::general;
  int64_t rows_ = 0, cols_ = 0, declared_ = 0, size_line_ = 0;
};

}  // namespace

CooTensor parse_matrix_market(std::string_view text, std::string_view name_for_errors,
                              MatrixMarketInfo* info) {
  return MatrixMarketParser(text, name_for_errors).parse(info);
}

CooTensor read_matrix_market(const std::string& path, MatrixMarketInfo* info) {
  std::string text = textio::read_file(path);
  return parse_matrix_market(text, path, info);
}

void write_matrix_market(const CooTensor& t, const std::string& path, bool pattern) {
  textio::check_writable(t, path, 2, "Matrix Market");
  const bool vector = t.order == 1;
  std::string out;
  // ~24 bytes per entry covers most values; the string grows if not.
  out.reserve(64 + t.values.size() * (pattern ? 14 : 36));
  out += pattern ? "%%MatrixMarket matrix coordinate pattern general\n"
                 : "%%MatrixMarket matrix coordinate real general\n";
  textio::append_int(&out, t.dims[0]);
  out += ' ';
  textio::append_int(&out, vector ? 1 : t.dims[1]);
  out += ' ';
  textio::append_int(&out, t.nnz());
  out += '\n';
  for (size_t k = 0; k < t.values.size(); ++k) {
    textio::append_int(&out, t.coords[0][k] + 1);
    out += ' ';
    textio::append_int(&out, vector ? 1 : t.coords[1][k] + 1);
    if (!pattern) {
      out += ' ';
      textio::append_real(&out, t.values[k]);
    }
    out += '\n';
  }
  textio::replace_file(path, out);
}

}  // namespace sj
