// A strict, iterative (no recursion, so deep nesting cannot overflow the stack) JSON checker.
#include "monitor/json_error_locator.hpp"

#include <cstdint>
#include <vector>

namespace streamsafe::monitor::detail {

namespace {

class checker {
 public:
  explicit checker(std::string_view text) : s_(text) {}

  syntax_error run() {
    skip_space();
    if (!value()) return error_;
    skip_space();
    if (pos_ != s_.size()) return fail("unexpected content after the JSON document");
    return {s_.size() + 1, ""};
  }

 private:
  enum class container : std::uint8_t { object, array };

  // Parses one value; containers are walked with an explicit stack.
  bool value() {
    std::vector<container> open;
    for (;;) {
      if (pos_ >= s_.size()) return failed("unexpected end of input");
      const char c = s_[pos_];
      if (c == '{' || c == '[') {
        ++pos_;
        skip_space();
        const char close = c == '{' ? '}' : ']';
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
        } else {
          open.push_back(c == '{' ? container::object : container::array);
          if (open.back() == container::object && !key()) return false;
          continue;
        }
      } else if (!scalar()) {
        return false;
      }
      // After a value: close containers or move to the next element.
      for (;;) {
        if (open.empty()) return true;
        skip_space();
        if (pos_ >= s_.size()) return failed("unexpected end of input inside a container");
        const char next = s_[pos_];
        const bool is_object = open.back() == container::object;
        if (next == ',') {
          ++pos_;
          skip_space();
          if (is_object && !key()) return false;
          break;
        }
        if (next == (is_object ? '}' : ']')) {
          ++pos_;
          open.pop_back();
          continue;
        }
        return failed(is_object ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
  }

  bool key() {
    if (pos_ >= s_.size() || s_[pos_] != '"') return failed("expected a string key");
    if (!string()) return false;
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != ':') return failed("expected ':' after a key");
    ++pos_;
    skip_space();
    return true;
  }

  bool scalar() {
    const char c = s_[pos_];
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    for (std::string_view word : {std::string_view("true"), std::string_view("false"), std::string_view("null")}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return true;
      }
    }
    return failed("expected a value");
  }

  bool string() {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return failed("control character inside a string");
      if (c == '\\') {
        if (!escape()) return false;
      } else if (c >= 0x80) {
        if (!utf8_sequence()) return false;
      } else {
        ++pos_;
      }
    }
    return failed("unterminated string");
  }

  bool escape() {
    if (pos_ + 1 >= s_.size()) return failed("unterminated escape");
    const char e = s_[pos_ + 1];
    if (e == 'u') {
      for (std::size_t i = 2; i < 6; ++i) {
        if (pos_ + i >= s_.size() || !is_hex(s_[pos_ + i])) return failed("bad \\u escape");
      }
      pos_ += 6;
      return true;
    }
    if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) return failed("bad escape");
    pos_ += 2;
    return true;
  }

  bool utf8_sequence() {
    const auto lead = static_cast<unsigned char>(s_[pos_]);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // allowed range of the first continuation byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return failed("invalid UTF-8");
    }
    for (std::size_t i = 1; i < length; ++i) {
      if (pos_ + i >= s_.size()) return failed("invalid UTF-8");
      const auto c = static_cast<unsigned char>(s_[pos_ + i]);
      const unsigned char lo = i == 1 ? low : 0x80, hi = i == 1 ? high : 0xBF;
      if (c < lo || c > hi) return failed("invalid UTF-8");
    }
    pos_ += length;
    return true;
  }

  bool number() {
    if (s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !is_digit(s_[pos_])) return failed("bad number");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      skip_digits();
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (pos_ >= s_.size() || !is_digit(s_[pos_])) return failed("bad number: digit expected after '.'");
      skip_digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !is_digit(s_[pos_])) return failed("bad number: digit expected in exponent");
      skip_digits();
    }
    return true;
  }

  void skip_digits() {
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  bool failed(const char* reason) {
    error_ = {pos_, reason};
    return false;
  }
  syntax_error fail(const char* reason) {
    failed(reason);
    return error_;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  syntax_error error_;
};

}  // namespace

syntax_error locate_syntax_error(std::string_view text) { return checker(text).run(); }

}  // namespace streamsafe::monitor::detail
