// Ownership moves of DeviceBuffer and DmaBufFd; freeing device memory is in cuda_runtime.cpp
// (or cuda_absent.cpp in a build without CUDA).
#include <unistd.h>

#include "capture/memory/cuda_runtime.hpp"

namespace rocecap::capture::memory {

DeviceBuffer::~DeviceBuffer() {
  reset();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(other.ptr_), bytes_(other.bytes_), device_(other.device_) {
  other.ptr_ = nullptr;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    device_ = other.device_;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

DmaBufFd::~DmaBufFd() {
  if (fd_ >= 0) ::close(fd_);
}

DmaBufFd& DmaBufFd::operator=(DmaBufFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

}  // namespace rocecap::capture::memory
