#include "events.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace sv {

EventQueue::~EventQueue() {
  if (rd_ >= 0) close(rd_);
  if (wr_ >= 0) close(wr_);
  if (drain_ >= 0) close(drain_);
}

bool EventQueue::open() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return false;
  rd_ = p[0];
  wr_ = p[1];
  fcntl(wr_, F_SETFL, fcntl(wr_, F_GETFL) | O_NONBLOCK);
  // Opening the pipe again gives a file description of its own, so withdrawing can read
  // without blocking while the application's fd keeps whatever mode it chose.
  const std::string self = "/proc/self/fd/" + std::to_string(rd_);
  drain_ = ::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  return true;
}

void EventQueue::push(const EventRecord& r) {
  std::lock_guard<std::mutex> g(mu_);
  q_.push_back(r);
  const char one = 1;
  // A full pipe already makes the fd readable; the record is queued either way.
  ssize_t n = write(wr_, &one, 1);
  (void)n;
}

bool EventQueue::pop(EventRecord& r) {
  for (;;) {
    char byte;
    if (read(rd_, &byte, 1) != 1) return false;
    std::lock_guard<std::mutex> g(mu_);
    if (!q_.empty()) {
      r = q_.front();
      q_.pop_front();
      return true;
    }
    // The byte belonged to a withdrawn event: wait for the next one.
  }
}

void EventQueue::withdraw(const void* obj) {
  std::lock_guard<std::mutex> g(mu_);
  const size_t gone = std::erase_if(q_, [obj](const EventRecord& r) { return r.obj == obj; });
  // Take their bytes too, so the fd stops polling readable. A byte already taken by a pop in
  // flight is fine: that pop finds no record and waits for the next event.
  char sink;
  for (size_t i = 0; i < gone && drain_ >= 0 && read(drain_, &sink, 1) == 1; ++i) {
  }
}

}  // namespace sv
