// CSV reading with positions in errors.
#include "berth/common/csv.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace berth {

std::vector<std::string> SplitCsvLine(std::string_view line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == sep) {
      out.push_back(std::move(cur));
      cur.clear();
    } else if (c != '\r') {
      cur.push_back(c);
    }
  }
  out.push_back(std::move(cur));
  return out;
}

static std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

Status ParseInt64(std::string_view text, int64_t& out) {
  std::string_view t = Trim(text);
  if (t.empty()) return InvalidArgument("empty value where an integer is expected");
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  if (ec == std::errc() && ptr == t.data() + t.size()) return Status::Ok();
  // Accept integral reals such as "66.0".
  double d;
  if (ParseDouble(t, d).ok() && std::floor(d) == d && std::fabs(d) < 9.0e18) {
    out = static_cast<int64_t>(d);
    return Status::Ok();
  }
  return InvalidArgument("'" + std::string(t) + "' is not an integer");
}

Status ParseDouble(std::string_view text, double& out) {
  std::string t(Trim(text));
  if (t.empty()) return InvalidArgument("empty value where a number is expected");
  char* end = nullptr;
  errno = 0;
  out = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(out)) {
    return InvalidArgument("'" + t + "' is not a number");
  }
  return Status::Ok();
}

StatusOr<CsvFile> CsvFile::Open(const std::string& path, bool has_header, char sep) {
  CsvFile f;
  f.path_ = path;
  f.sep_ = sep;
  f.in_.open(path);
  if (!f.in_) return NotFound(path + ": cannot open file");
  if (has_header) {
    if (!f.Next()) return InvalidArgument(path + ": empty file (no header line)");
    f.header_ = f.fields_;
    for (auto& h : f.header_) h = std::string(Trim(h));
  }
  return f;
}

bool CsvFile::Next() {
  while (std::getline(in_, line_)) {
    ++line_no_;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (Trim(line_).empty()) continue;
    fields_ = SplitCsvLine(line_, sep_);
    return true;
  }
  return false;
}

int CsvFile::Column(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return static_cast<int>(i);
  return -1;
}

Status CsvFile::Error(std::string_view message) const {
  return InvalidArgument(path_ + ":" + std::to_string(line_no_) + ": " + std::string(message));
}

Status CsvFile::CheckWidth() const {
  if (fields_.size() != header_.size()) {
    return Error("expected " + std::to_string(header_.size()) + " fields, found " +
                 std::to_string(fields_.size()) + (fields_.size() < header_.size() ? " (truncated line?)" : ""));
  }
  return Status::Ok();
}

Status CsvFile::FieldAt(int index, std::string_view column, std::string_view& out) const {
  if (index < 0) return Error("no column '" + std::string(column) + "' in the header");
  if (static_cast<size_t>(index) >= fields_.size()) {
    return Error("missing field '" + std::string(column) + "' (line has " + std::to_string(fields_.size()) +
                 " fields; truncated?)");
  }
  out = fields_[index];
  return Status::Ok();
}

Status CsvFile::GetString(std::string_view column, std::string& out) const {
  std::string_view v;
  BERTH_RETURN_IF_ERROR(FieldAt(Column(column), column, v));
  out = std::string(Trim(v));
  return Status::Ok();
}

Status CsvFile::GetInt(std::string_view column, int64_t& out) const {
  std::string_view v;
  BERTH_RETURN_IF_ERROR(FieldAt(Column(column), column, v));
  Status s = ParseInt64(v, out);
  if (!s.ok()) return Error(std::string(column) + ": " + s.message());
  return Status::Ok();
}

Status CsvFile::GetDouble(std::string_view column, double& out) const {
  std::string_view v;
  BERTH_RETURN_IF_ERROR(FieldAt(Column(column), column, v));
  Status s = ParseDouble(v, out);
  if (!s.ok()) return Error(std::string(column) + ": " + s.message());
  return Status::Ok();
}

Status CsvFile::GetIntAt(int index, int64_t& out) const {
  std::string name = "field " + std::to_string(index + 1);
  std::string_view v;
  BERTH_RETURN_IF_ERROR(FieldAt(index, name, v));
  Status s = ParseInt64(v, out);
  if (!s.ok()) return Error(name + ": " + s.message());
  return Status::Ok();
}

Status CsvFile::GetDoubleAt(int index, double& out) const {
  std::string name = "field " + std::to_string(index + 1);
  std::string_view v;
  BERTH_RETURN_IF_ERROR(FieldAt(index, name, v));
  Status s = ParseDouble(v, out);
  if (!s.ok()) return Error(name + ": " + s.message());
  return Status::Ok();
}

}  // namespace berth
