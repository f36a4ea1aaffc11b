// Identifier checks: control and bidi characters refused, ordinary text kept.
#include "berth/common/identifier.h"

#include <gtest/gtest.h>

#include <string>

namespace berth {
namespace {

TEST(IdentifierTest, OrdinaryTextPasses) {
  for (const char* t : {"", "llm-train", "ml/team_a.b", "日本語", "Zürich job", "emoji \xF0\x9F\x9A\x80"})
    EXPECT_TRUE(CheckIdentifier("name", t).ok()) << t;
}

TEST(IdentifierTest, ControlsRefused) {
  EXPECT_EQ(CheckIdentifier("name", std::string("a\0b", 3)).message(),
            "name: contains the control character U+0000 at byte 1");
  EXPECT_EQ(CheckIdentifier("tenant", "x\ny").message(), "tenant: contains the control character U+000A at byte 1");
  EXPECT_FALSE(CheckIdentifier("n", "\x7f").ok());
  EXPECT_FALSE(CheckIdentifier("n", "\xC2\x85").ok());  // NEL (C1)
  EXPECT_FALSE(CheckIdentifier("n", "\x1b[31m").ok());
}

TEST(IdentifierTest, BidiRefused) {
  EXPECT_EQ(CheckIdentifier("name", "llm\xE2\x80\xAEtxt").message(),
            "name: contains the bidirectional control U+202E at byte 3");
  for (const char* t : {"\xE2\x80\xAA", "\xE2\x80\xAB", "\xE2\x80\xAC", "\xE2\x80\xAD", "\xE2\x81\xA6", "\xE2\x81\xA7",
                        "\xE2\x81\xA8", "\xE2\x81\xA9", "\xE2\x80\x8F", "\xD8\x9C"})
    EXPECT_FALSE(CheckIdentifier("n", t).ok()) << t;
}

TEST(IdentifierTest, InvalidUtf8Refused) {
  for (const char* t : {"\xff", "\xC0\xAF", "\xE2\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80"})
    EXPECT_FALSE(CheckIdentifier("n", t).ok()) << t;
}

}  // namespace
}  // namespace berth
