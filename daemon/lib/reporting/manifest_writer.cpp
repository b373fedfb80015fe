#include "daemon/lib/reporting/manifest_writer.hpp"

#include <pthread.h>

#include <utility>

namespace rocecap::daemon {

ManifestWriter::ManifestWriter(Write write) : write_(std::move(write)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "rc-manifest");
    run();
  });
}

ManifestWriter::~ManifestWriter() {
  stop();
}

void ManifestWriter::post(Manifest snapshot) {
  {
    const std::lock_guard lock(mutex_);
    ++counts_.posted;
    if (stopping_) {  // the final manifest follows
      ++counts_.superseded;
      return;
    }
    if (pending_) ++counts_.superseded;
    pending_ = std::move(snapshot);
  }
  wake_.notify_one();
}

void ManifestWriter::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    if (pending_) {
      ++counts_.superseded;
      pending_.reset();
    }
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

ManifestWriter::Counts ManifestWriter::counts() const {
  const std::lock_guard lock(mutex_);
  return counts_;
}

void ManifestWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || pending_.has_value(); });
    if (stopping_) return;
    Manifest m = std::move(*pending_);
    pending_.reset();
    lock.unlock();
    const bool ok = write_(m).empty();  // the disk's time, with no lock held
    lock.lock();
    ++(ok ? counts_.written : counts_.failed);
  }
}

}  // namespace rocecap::daemon
