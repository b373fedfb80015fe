// Replacing a file so that a reader (or a crash) only ever sees the old or the new whole file:
// write a temporary file beside it, fsync it, rename it over the target, fsync the directory.
#pragma once

#include <string>
#include <string_view>

namespace rocecap::daemon {

// Returns an empty string on success, else a message naming the path and the error.
std::string replace_file_atomically(const std::string& path, std::string_view content);

// The same inside the directory open as `dirfd` (openat/renameat): the file lands in that very
// directory even if its path was since replaced by a symlink or another directory. `name` is a
// plain file name; `shown` is the path named in messages. Created with `mode` (umask applied).
// `durable` false: neither the file nor the directory is fsynced. Readers, and a crash of the
// process, still see the old or the new whole file (the rename is atomic, the page cache
// survives the process). After a power loss or a kernel crash the rename may have reached the
// disk without the data: ext4 guards against that by default (auto_da_alloc: a file renamed
// over an existing one has its blocks allocated and written at the rename), other file
// systems may leave an empty file. Why not always fsync: it makes the device flush its write
// cache, and on the VM measured the disk then stopped taking the run's O_DIRECT writes for
// 0.2-0.8 s (BENCHMARKS.md, "The manifest's fsync").
std::string replace_file_atomically_at(int dirfd, const std::string& name, std::string_view content,
                                       const std::string& shown, unsigned mode = 0640,
                                       bool durable = true);

}  // namespace rocecap::daemon
