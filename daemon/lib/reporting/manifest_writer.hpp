// Writes the running manifest's snapshots on a thread of its own, so that the writer thread
// that takes them never waits on the run directory's disk.
//
// Why: a snapshot is taken on the writer thread (its stats and file lists are quiescent
// there). Written there too, with fsync as it was, every ring stopped draining for as long as
// the device took to flush its cache (ext4_sync_file -> blkdev_issue_flush: 0.2-2.5 s on a
// virtio disk taking 625 MB/s, BENCHMARKS.md "The manifest's fsync"; with a writer pool, every
// thread, the others being parked). The running snapshots are now also written without fsync
// (run.cpp), since the flush stops the disk whichever thread asks; a rename or a page-cache
// write can still block (0.44 s seen for a rename that discarded the old file's blocks), and
// that is now this thread's wait.
//
// post() hands a snapshot over and returns at once; a snapshot posted while an older one is
// still waiting replaces it (only the newest state is worth writing). One write at a time, in
// post order. stop() lets the write in progress finish, drops one not yet started (the run's
// final manifest follows and supersedes it) and joins: after it the caller owns the file again.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "daemon/lib/reporting/manifest.hpp"

namespace rocecap::daemon {

class ManifestWriter {
 public:
  // Writes one snapshot; returns an empty string on success, else the error (which the
  // function reports itself: it runs on the manifest thread).
  using Write = std::function<std::string(const Manifest&)>;

  explicit ManifestWriter(Write write);
  ~ManifestWriter();  // stop()
  ManifestWriter(const ManifestWriter&) = delete;
  ManifestWriter& operator=(const ManifestWriter&) = delete;

  void post(Manifest snapshot);
  void stop();

  struct Counts {
    uint64_t posted = 0;      // = written + failed + superseded, plus one waiting or in progress
    uint64_t written = 0;     // writes that returned no error
    uint64_t failed = 0;      // writes that returned an error
    uint64_t superseded = 0;  // replaced by a newer snapshot, or dropped by stop(), unwritten
  };
  Counts counts() const;

 private:
  void run();

  Write write_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Manifest> pending_;
  bool stopping_ = false;
  Counts counts_;
  std::thread thread_;  // last: started once the members it uses exist
};

}  // namespace rocecap::daemon
