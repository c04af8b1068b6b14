#include "base/progress_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace mlakit {

bool is_terminal(FILE* to) { return to != nullptr && isatty(fileno(to)) == 1; }

int terminal_width(FILE* to) {
  winsize w{};
  if (to != nullptr && ioctl(fileno(to), TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

ProgressLine::ProgressLine(FILE* to, bool quiet)
    : ProgressLine(to, !quiet && is_terminal(to), is_terminal(to) ? terminal_width(to) : 80) {}

ProgressLine::ProgressLine(FILE* to, bool enabled, int width) : to_(to), enabled_(enabled), width_(width) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::show(const std::string& text) {
  if (!enabled_) return;
  // One column short of the width: a line that fills the terminal makes some of them wrap.
  const size_t room = width_ > 1 ? size_t(width_ - 1) : 1;
  const std::string line = text.size() > room ? text.substr(0, room) : text;
  std::fprintf(to_, "\r%s\033[K", line.c_str());
  std::fflush(to_);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_) return;
  std::fprintf(to_, "\r\033[K");
  std::fflush(to_);
  shown_ = false;
}

}  // namespace mlakit
