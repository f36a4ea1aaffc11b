// The untrusted-JSON parser: limits, duplicate keys, positions, excerpts.
#include "berth/json/json_parse.h"

#include <gtest/gtest.h>

namespace berth::json {
namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonParseTest, ParsesDocuments) {
  auto v = ParseUntrusted(R"({"a":[1,2,{"b":null}],"c":"x","d":1.5,"e":18446744073709551615,"f":true})");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ((*v)["a"][2].count("b"), 1u);
  EXPECT_EQ((*v)["c"], "x");
  EXPECT_TRUE((*v)["e"].is_number_unsigned());
  EXPECT_EQ(*ParseUntrusted("3"), 3);
  EXPECT_EQ(*ParseUntrusted("\"s\""), "s");
  EXPECT_EQ(*ParseUntrusted("{}"), nlohmann::json::object());
  // The same value as nlohmann's own parser.
  const std::string text = R"({"x":[[1],[2,[3,{"y":[]}]]],"z":{"w":{}}})";
  EXPECT_EQ(*ParseUntrusted(text), nlohmann::json::parse(text));
}

TEST(JsonParseTest, NestingLimit) {
  EXPECT_TRUE(ParseUntrusted(Nested(64)).ok());
  auto deep = ParseUntrusted(Nested(65));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().message(), "nesting deeper than 64 levels (at byte 65)");
  // 250,000 levels: refused at level 65, nothing deep is built.
  auto huge = ParseUntrusted(std::string(250'000, '['), {.max_bytes = 1 << 20});
  EXPECT_FALSE(huge.ok());
  EXPECT_TRUE(ParseUntrusted(Nested(3), {.max_depth = 3}).ok());
  EXPECT_FALSE(ParseUntrusted(R"({"a":{"b":{"c":1}}})", {.max_depth = 2}).ok());
}

TEST(JsonParseTest, DuplicateKeysRefused) {
  auto v = ParseUntrusted(R"({"name":"a","groups":[],"groups":[1]})");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "duplicate key \"groups\" in an object (at byte 32)");
  // Same key in different objects is fine.
  EXPECT_TRUE(ParseUntrusted(R"({"a":{"k":1},"b":{"k":2}})").ok());
  EXPECT_TRUE(ParseUntrusted(R"({"k":1,"k":2})", {.allow_duplicate_keys = true}).ok());
}

TEST(JsonParseTest, SizeLimit) {
  auto v = ParseUntrusted("[1,2,3]", {.max_bytes = 4});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "body of 7 bytes is over the limit of 4");
}

TEST(JsonParseTest, MalformedIsCut) {
  for (const char* t : {"", "{", "[1,]", "{\"a\" 1}", "nul", "\"\\u12\"", "1 2", "{\"a\":\"\xff\"}"}) {
    auto v = ParseUntrusted(t);
    ASSERT_FALSE(v.ok()) << t;
    EXPECT_EQ(v.status().message().rfind("malformed JSON", 0), 0u) << v.status().message();
  }
  // An unterminated string of 500 KB does not come back in the message.
  auto v = ParseUntrusted("\"" + std::string(500'000, 'a'));
  ASSERT_FALSE(v.ok());
  EXPECT_LT(v.status().message().size(), 300u);
}

TEST(JsonParseTest, Excerpts) {
  EXPECT_EQ(Excerpt(nlohmann::json(5)), "5");
  EXPECT_EQ(Excerpt(nlohmann::json("abc")), "\"abc\"");
  EXPECT_EQ(Excerpt(nlohmann::json::parse(R"({"a":[1,2]})")), R"({"a":[1,2]})");
  nlohmann::json big = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(i);
  const std::string e = Excerpt(big, 40);
  EXPECT_LE(e.size(), 40u);
  EXPECT_EQ(e.substr(e.size() - 3), "...");
  EXPECT_EQ(ExcerptText(std::string(1000, 'x'), 5), "\"xxxxx\"...");
  EXPECT_EQ(ExcerptText("a\nb"), "\"a\\nb\"");
  // A cut never splits a UTF-8 character.
  const std::string ex = Excerpt(nlohmann::json(std::string(30, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"), 36);
  EXPECT_NO_THROW((void)nlohmann::json(ex).dump());
}

}  // namespace
}  // namespace berth::json
