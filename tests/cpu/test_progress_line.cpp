// The progress line (base/progress_line.h): rewritten in place, cut to the width, erased before
// other output, silent when off.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/progress_line.h"

namespace mlakit {
namespace {

// What a ProgressLine writes, captured in memory.
class Captured {
 public:
  Captured() : file_(open_memstream(&data_, &size_)) {}
  ~Captured() {
    if (file_) std::fclose(file_);
    std::free(data_);
  }
  FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  FILE* file_;
};

TEST(ProgressLine, RewritesInPlaceAndErasesBeforeOtherOutput) {
  Captured out;
  {
    ProgressLine p(out.file(), true, 80);
    p.show("[1/3] contest-00: timing");
    p.show("[2/3] contest-01: timing");
    p.clear();
    p.clear();  // nothing shown: nothing written
    std::fputs("row\n", out.file());
    p.show("[3/3] contest-02: timing");
  }  // the destructor erases the line
  EXPECT_EQ(out.text(),
            "\r[1/3] contest-00: timing\033[K\r[2/3] contest-01: timing\033[K\r\033[Krow\n"
            "\r[3/3] contest-02: timing\033[K\r\033[K");
}

TEST(ProgressLine, CutToOneColumnLessThanTheWidth) {
  Captured out;
  ProgressLine p(out.file(), true, 10);
  p.show("0123456789abcdef");
  EXPECT_EQ(out.text(), "\r012345678\033[K");
}

TEST(ProgressLine, SilentWhenOffOrNotATerminal) {
  Captured out;
  {
    ProgressLine off(out.file(), false, 80);
    off.show("x");
    off.clear();
    ProgressLine memory(out.file(), false);  // a memory stream is no terminal
    EXPECT_FALSE(memory.enabled());
    memory.show("y");
  }
  EXPECT_EQ(out.text(), "");
  EXPECT_FALSE(is_terminal(out.file()));
  EXPECT_EQ(terminal_width(out.file()), 80);
}

}  // namespace
}  // namespace mlakit
