// Counts every global operator new of the test executable that includes this header, so a test
// can assert that a path allocates nothing. The replacement operators are ordinary (non-inline)
// definitions: include this header from exactly one source file of an executable.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace rocecap::test {
inline std::atomic<std::size_t> g_allocations{0};
inline std::size_t allocations() noexcept {
  return g_allocations.load(std::memory_order_relaxed);
}
}  // namespace rocecap::test

void* operator new(std::size_t n) {
  rocecap::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
