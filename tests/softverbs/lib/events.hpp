// Event delivery shared by completion channels and the async fd. A pipe carries one byte per
// event so the application can poll()/block on the fd exactly as on uverbs; the records sit in
// a queue beside it so destroying an object can withdraw its unread events, as the kernel does.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

namespace sv {

struct EventRecord {
  int type;
  void* obj;
};

class EventQueue {
 public:
  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;
  ~EventQueue();

  bool open();
  int read_fd() const { return rd_; }
  // Never blocks: the device side must not stall behind an application that stopped reading.
  void push(const EventRecord& r);
  // Blocks like read(2) on the fd (or fails with EAGAIN when the application made it
  // non-blocking). Returns false on failure.
  bool pop(EventRecord& r);
  // Withdraws the unread events of `obj`.
  void withdraw(const void* obj);

 private:
  int rd_ = -1;
  int wr_ = -1;
  int drain_ = -1;  // a second, non-blocking open of the read end, for withdrawing
  std::mutex mu_;
  std::deque<EventRecord> q_;
};

}  // namespace sv
