// The bounded, duplicate-refusing JSON builder over nlohmann's SAX parser.
#include "berth/json/json_parse.h"

#include <iterator>
#include <vector>

namespace berth::json {
namespace {

using nlohmann::json;

// A char iterator that publishes how far the parser has read, so that the
// builder can say where in the text an event happened.
struct CountingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* p = nullptr;
  const char** read_to = nullptr;

  reference operator*() const { return *p; }
  CountingIterator& operator++() {
    ++p;
    if (read_to) *read_to = p;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p == o.p; }
  bool operator!=(const CountingIterator& o) const { return p != o.p; }
};

// Builds the document from SAX events with an explicit stack of open
// containers (the same scheme as nlohmann's own DOM builder), checking depth
// and keys as they arrive. Pointers on the stack stay valid: an open
// container is the last element of its parent, and nothing is added to the
// parent while it is open.
class Builder {
 public:
  Builder(const ParseLimits& limits, const char* begin, const char* const* read_to)
      : limits_(limits), begin_(begin), read_to_(read_to) {}

  bool null() { return Value(nullptr); }
  bool boolean(bool v) { return Value(v); }
  bool number_integer(json::number_integer_t v) { return Value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return Value(v); }
  bool string(json::string_t& v) { return Value(std::move(v)); }
  bool binary(json::binary_t& v) { return Value(json::binary(std::move(v))); }

  bool start_object(std::size_t) { return Open(json::value_t::object); }
  bool start_array(std::size_t) { return Open(json::value_t::array); }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }

  bool key(json::string_t& k) {
    json* obj = stack_.back();
    if (!limits_.allow_duplicate_keys && obj->contains(k)) {
      error_ = "duplicate key " + ExcerptText(k) + " in an object (at byte " + std::to_string(Offset()) + ")";
      return false;
    }
    slot_ = &(*obj)[std::move(k)];
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    // nlohmann's message quotes the last token, which may be the whole body.
    std::string what = ex.what();
    if (what.size() > 200) what = what.substr(0, 197) + "...";
    error_ = "malformed JSON: " + what;
    (void)position;
    return false;
  }

  json TakeRoot() { return std::move(root_); }
  const std::string& error() const { return error_; }

 private:
  size_t Offset() const { return static_cast<size_t>(*read_to_ - begin_); }

  template <typename V>
  json* Place(V&& v) {
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json* top = stack_.back();
    if (top->is_array()) {
      top->emplace_back(std::forward<V>(v));
      return &top->back();
    }
    *slot_ = json(std::forward<V>(v));
    return slot_;
  }

  template <typename V>
  bool Value(V&& v) {
    Place(std::forward<V>(v));
    return true;
  }

  bool Open(json::value_t type) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      error_ = "nesting deeper than " + std::to_string(limits_.max_depth) + " levels (at byte " +
               std::to_string(Offset()) + ")";
      return false;
    }
    stack_.push_back(Place(type));
    return true;
  }

  const ParseLimits& limits_;
  const char* begin_;
  const char* const* read_to_;
  json root_;
  std::vector<json*> stack_;
  json* slot_ = nullptr;
  std::string error_;
};

void AppendExcerpt(const json& v, size_t max_chars, int depth, std::string& out) {
  if (out.size() > max_chars) return;
  switch (v.type()) {
    case json::value_t::object: {
      if (depth > 8) {
        out += "{...}";
        return;
      }
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end() && out.size() <= max_chars; ++it) {
        if (!first) out += ',';
        first = false;
        out += ExcerptText(it.key(), max_chars);
        out += ':';
        AppendExcerpt(it.value(), max_chars, depth + 1, out);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      if (depth > 8) {
        out += "[...]";
        return;
      }
      out += '[';
      bool first = true;
      for (auto it = v.begin(); it != v.end() && out.size() <= max_chars; ++it) {
        if (!first) out += ',';
        first = false;
        AppendExcerpt(*it, max_chars, depth + 1, out);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      out += ExcerptText(v.get_ref<const std::string&>(), max_chars);
      return;
    case json::value_t::binary:
      out += "<binary>";
      return;
    default:
      out += v.dump();  // a scalar
      return;
  }
}

// The first `n` bytes of `s`, moved back to a UTF-8 character boundary.
std::string CutUtf8(const std::string& s, size_t n) {
  if (n >= s.size()) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

StatusOr<nlohmann::json> ParseUntrusted(std::string_view text, const ParseLimits& limits) {
  if (text.size() > limits.max_bytes)
    return InvalidArgument("body of " + std::to_string(text.size()) + " bytes is over the limit of " +
                           std::to_string(limits.max_bytes));
  const char* begin = text.data();
  const char* read_to = begin;
  CountingIterator first{begin, &read_to}, last{begin + text.size(), nullptr};
  Builder builder(limits, begin, &read_to);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(first, last, &builder, nlohmann::json::input_format_t::json, true);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("malformed JSON: ") + e.what());
  }
  if (!ok) return InvalidArgument(builder.error().empty() ? "malformed JSON" : builder.error());
  return builder.TakeRoot();
}

std::string Excerpt(const nlohmann::json& v, size_t max_chars) {
  std::string out;
  AppendExcerpt(v, max_chars, 0, out);
  if (out.size() > max_chars) out = CutUtf8(out, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return out;
}

std::string ExcerptText(std::string_view text, size_t max_chars) {
  const bool cut = text.size() > max_chars;
  std::string shown = nlohmann::json(std::string(text.substr(0, max_chars)))
                          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return cut ? shown + "..." : shown;
}

}  // namespace berth::json
