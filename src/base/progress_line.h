// One line of progress on a terminal ("[3/23] contest-02: verifying and timing"), rewritten in
// place with "\r" and erase-to-end-of-line, cut to the terminal's width (a wrapped line could not
// be rewritten), and erased before anything else is printed. Off unless the stream is a terminal
// and the user did not ask for quiet, so that logs, pipes and CI never see it.
#pragma once

#include <cstdio>
#include <string>

namespace mlakit {

class ProgressLine {
 public:
  // On when `to` is a terminal and !quiet.
  ProgressLine(FILE* to, bool quiet);
  // On or off as told, `width` columns: for tests.
  ProgressLine(FILE* to, bool enabled, int width);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  void show(const std::string& text);
  // Erases the line (when one is shown); call before printing anything else to the stream.
  void clear();

 private:
  FILE* to_;
  bool enabled_;
  int width_;
  bool shown_ = false;
};

// Whether `to` is a terminal, and its width in columns (80 when it does not say).
bool is_terminal(FILE* to);
int terminal_width(FILE* to);

}  // namespace mlakit
