// Messages show what a reader cannot see (issue 28 UM5): invisible characters escaped and
// named, the rest as written.
#include "trnsim/config/units.hpp"

#include <gtest/gtest.h>

#include <string>

namespace trnsim::config {
namespace {

TEST(QuoteVisible, PlainTextIsShownAsWritten) {
    EXPECT_EQ(quote_visible("5s"), "'5s'");
    EXPECT_EQ(quote_visible("caf\xc3\xa9"), "'caf\xc3\xa9'"); // a visible non-ASCII letter
}

TEST(QuoteVisible, InvisibleCharactersAreEscapedAndNamed) {
    EXPECT_EQ(quote_visible("\xEF\xBB\xBF"
                            "5s"),
              "'\\ufeff5s' (invisible: U+FEFF ZERO WIDTH NO-BREAK SPACE, a byte order mark at "
              "character 1)");
    EXPECT_EQ(quote_visible("1h\xE2\x80\x8B"),
              "'1h\\u200b' (invisible: U+200B ZERO WIDTH SPACE at character 3)");
    EXPECT_EQ(quote_visible(std::string("a\tb\0c", 5)),
              "'a\\tb\\x00c' (invisible: U+0009 TAB at character 2; U+0000 NUL at character 4)");
    EXPECT_EQ(quote_visible("x\xC2\xA0y"),
              "'x\\u00a0y' (invisible: U+00A0 NO-BREAK SPACE at character 2)");
    // A byte that does not start a UTF-8 sequence.
    EXPECT_EQ(quote_visible("a\xFF"), "'a\\xff' (invisible: byte xff, not UTF-8 at character 2)");
}

// The unit parsers quote through it: a duration with a zero-width space names it.
TEST(QuoteVisible, UnitErrorsNameTheInvisibleCharacter) {
    try {
        (void)parse_duration("1h\xE2\x80\x8B");
        ADD_FAILURE() << "accepted";
    } catch (const UnitError& e) {
        EXPECT_NE(std::string(e.what()).find("'1h\\u200b' (invisible: U+200B ZERO WIDTH SPACE"),
                  std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace trnsim::config
