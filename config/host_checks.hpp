// Facts about this host that a run file is checked against.
#pragma once

#include <string>
#include <vector>

namespace rocecap::config {

// CPU ids this process may pin threads to (its affinity mask; all online CPUs as fallback).
std::vector<unsigned> usable_cpus();

// "0-3,8,10-11".
std::string format_cpu_list(const std::vector<unsigned>& cpus);

// Empty when the directory exists and this process can create files in it, or when it does not
// exist and its nearest existing ancestor is such a directory (it can be created); else why not.
// Writability is probed by creating an unnamed O_TMPFILE file (nothing is left behind), which
// also catches read-only mounts and ACLs; where the file system lacks O_TMPFILE it falls back
// to faccessat(W_OK|X_OK, AT_EACCESS).
std::string check_writable_directory(const std::string& directory);

// Empty when path is a regular file this process can open for reading; else why not.
std::string check_readable_file(const std::string& path);

}  // namespace rocecap::config
