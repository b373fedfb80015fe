// Builds against the installed header and library only: checks the contract's sizes and that
// a connection to a socket that is not there fails with an exception naming it.
#include <cstdio>
#include <rocecap_consumer.hpp>
#include <stdexcept>
#include <string>

int main() {
  namespace rc = rocecap::consumer;
  static_assert(sizeof(rc::abi::ControlHeader) == 256 && sizeof(rc::abi::Descriptor) == 128);
  rc::ConnectOptions options;
  options.socket = "/nonexistent/rocecap-downstream.sock";
  try {
    rc::Client client(options);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find(options.socket) == std::string::npos) return 1;
    std::printf("downstream: linked rocecap::consumer (abi version %u): %s\n", rc::abi::kVersion,
                e.what());
    return 0;
  }
  return 1;
}
