// A small CSV reader for trace files. It keeps the file name and line number
// so that every error names its place ("philly.csv:1234: num_gpus: ..."), and
// it parses typed fields strictly (no silent zero for "abc").
//
//   BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
//   while (f.Next()) { int64_t x; BERTH_RETURN_IF_ERROR(f.GetInt("cpu_milli", x)); }
//
// Quoting: a field may be wrapped in double quotes (with "" for a quote); no
// embedded newlines. Blank lines are skipped.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "berth/common/status.h"

namespace berth {

// Splits one CSV line into fields.
std::vector<std::string> SplitCsvLine(std::string_view line, char sep = ',');

// Strict number parsing. The error names the text that failed.
Status ParseInt64(std::string_view text, int64_t& out);
Status ParseDouble(std::string_view text, double& out);

class CsvFile {
 public:
  // Opens `path`; if `has_header`, the first non-blank line gives column names.
  static StatusOr<CsvFile> Open(const std::string& path, bool has_header = true, char sep = ',');

  // Advances to the next data line; false at end of file.
  bool Next();

  const std::string& path() const { return path_; }
  int64_t line_number() const { return line_no_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<std::string>& fields() const { return fields_; }
  const std::string& raw_line() const { return line_; }

  // Index of a column, or -1.
  int Column(std::string_view name) const;
  bool HasColumn(std::string_view name) const { return Column(name) >= 0; }
  // Checks that the current line has exactly as many fields as the header.
  Status CheckWidth() const;

  // Field access by column name or index; errors name file, line and column.
  Status GetString(std::string_view column, std::string& out) const;
  Status GetInt(std::string_view column, int64_t& out) const;
  Status GetDouble(std::string_view column, double& out) const;
  Status GetIntAt(int index, int64_t& out) const;
  Status GetDoubleAt(int index, double& out) const;

  // "path:line: message" as an InvalidArgument status.
  Status Error(std::string_view message) const;

 private:
  CsvFile() = default;
  Status FieldAt(int index, std::string_view column, std::string_view& out) const;

  std::string path_;
  char sep_ = ',';
  std::ifstream in_;
  std::vector<std::string> header_;
  std::vector<std::string> fields_;
  std::string line_;
  int64_t line_no_ = 0;
};

}  // namespace berth
