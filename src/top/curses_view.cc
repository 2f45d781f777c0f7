// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <cstdio>

#include "top/view.h"

// Last: curses defines macros (erase, clear, timeout, ...) that would rewrite
// names in the headers above.
#include <curses.h>

namespace bpfprof::top {

struct CursesView::Impl {
  SCREEN* screen = nullptr;
};

Result<std::unique_ptr<CursesView>> CursesView::open() {
  BPFPROF_TRY(check_terminal());
  std::setlocale(LC_ALL, "");
  std::unique_ptr<CursesView> v(new CursesView());
  v->impl_ = std::make_unique<Impl>();
  // newterm, unlike initscr, returns an error instead of exiting the process.
  v->impl_->screen = newterm(nullptr, stdout, stdin);
  if (v->impl_->screen == nullptr) {
    return make_error(Errc::kInvalidArgument,
                      "cannot drive this terminal (TERM unset or unknown; use --stdio)");
  }
  // cbreak, not raw: Ctrl-C still raises SIGINT, which the caller takes from
  // its signalfd and leaves through the destructor like `q`.
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  curs_set(0);
  if (has_colors()) {
    start_color();
    use_default_colors();
    init_pair(1, COLOR_YELLOW, -1);
  }
  return v;
}

CursesView::~CursesView() {
  if (impl_ && impl_->screen) {
    curs_set(1);
    endwin();
    delscreen(impl_->screen);
  }
}

Status CursesView::show(const std::vector<Line>& lines) {
  erase();
  const int rows = LINES, cols = COLS;
  for (int y = 0; y < rows && static_cast<size_t>(y) < lines.size(); y++) {
    const Line& l = lines[static_cast<size_t>(y)];
    attr_t a = A_NORMAL;
    switch (l.style) {
      case Line::Style::kTitle: a = A_REVERSE; break;
      case Line::Style::kHeading: a = A_BOLD; break;
      case Line::Style::kGone: a = has_colors() ? COLOR_PAIR(1) : A_DIM; break;
      case Line::Style::kNormal: break;
    }
    attrset(a);
    mvaddnstr(y, 0, l.text.c_str(), cols);
    if (l.style == Line::Style::kTitle) {
      // The reverse bar spans the whole width.
      for (int x = static_cast<int>(std::min<size_t>(l.text.size(), static_cast<size_t>(cols)));
           x < cols; x++) {
        mvaddch(y, x, ' ');
      }
    }
  }
  attrset(A_NORMAL);
  if (refresh() == ERR) return make_error(Errc::kIo, "writing the terminal failed");
  return ok_status();
}

ScreenSize CursesView::size() const {
  // Status (2) + program heading + blank + symbol heading: 5 fixed lines; the
  // programs take up to two thirds of the rest, the symbols what is left.
  const size_t rows = static_cast<size_t>(std::max(LINES, 8));
  const size_t body = rows - 5;
  ScreenSize s;
  s.program_rows = std::max<size_t>(1, body * 2 / 3 - 1);  // one for "... more"
  s.symbol_rows = std::max<size_t>(1, body - s.program_rows - 1);
  s.width = static_cast<size_t>(std::max(COLS, 20));
  return s;
}

int CursesView::input_fd() const { return STDIN_FILENO; }

std::vector<Key> CursesView::keys() {
  std::vector<Key> out;
  for (int c = getch(); c != ERR; c = getch()) {
    switch (c) {
      case 'q': case 'Q': out.push_back(Key::kQuit); break;
      case 's': case 'S': out.push_back(Key::kSort); break;
      case 'b': case 'B': out.push_back(Key::kBpfOnly); break;
      case 'i': case 'I': out.push_back(Key::kInstances); break;
      case KEY_RESIZE: case 'L' & 0x1f: out.push_back(Key::kRedraw); break;
      default: break;
    }
  }
  return out;
}

}  // namespace bpfprof::top

// Last of all: term.h defines macros named after terminal capabilities
// (lines, columns, ...) that would rewrite names above.
#include <term.h>

namespace bpfprof::top {

Status CursesView::check_terminal() {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) {
    return make_error(Errc::kInvalidArgument, "not a terminal (use --stdio for plain output)");
  }
  // What newterm needs: a terminal description for TERM.
  int err = 0;
  if (setupterm(nullptr, STDOUT_FILENO, &err) != OK) {
    return make_error(Errc::kInvalidArgument,
                      "cannot drive this terminal (TERM unset or unknown; use --stdio)");
  }
  del_curterm(cur_term);  // newterm makes its own
  return ok_status();
}

}  // namespace bpfprof::top
