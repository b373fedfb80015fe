// The fleet's etcd key layout (fleet/README.md, doc/fleet.md "Keys"), in one place.
#pragma once

#include <string>
#include <string_view>

namespace rocecap::fleet {

class Keys {
 public:
  explicit Keys(std::string_view fleet) : prefix_("/rocecap/" + std::string(fleet)) {}

  const std::string& prefix() const { return prefix_; }
  std::string runs() const { return prefix_ + "/runs/"; }
  std::string run(std::string_view run) const { return runs() + std::string(run) + "/"; }
  std::string state(std::string_view r) const { return run(r) + "state"; }
  std::string plan(std::string_view r) const { return run(r) + "plan"; }
  std::string hosts(std::string_view r) const { return run(r) + "hosts/"; }
  std::string host(std::string_view r, std::string_view h) const {
    return hosts(r) + std::string(h);
  }
  std::string answers(std::string_view r) const { return run(r) + "answers/"; }
  std::string answer(std::string_view r, std::string_view h) const {
    return answers(r) + std::string(h);
  }
  std::string statuses(std::string_view r) const { return run(r) + "status/"; }
  std::string status(std::string_view r, std::string_view h) const {
    return statuses(r) + std::string(h);
  }
  std::string manifests(std::string_view r) const { return run(r) + "manifests/"; }
  std::string manifest(std::string_view r, std::string_view h) const {
    return manifests(r) + std::string(h);
  }
  std::string triggers(std::string_view r) const { return run(r) + "triggers/"; }
  std::string trigger(std::string_view r, std::string_view id) const {
    return triggers(r) + std::string(id);
  }
  std::string trigger_answers(std::string_view r, std::string_view id) const {
    return run(r) + "trigger-answers/" + std::string(id) + "/";
  }
  std::string trigger_answer(std::string_view r, std::string_view id, std::string_view h) const {
    return trigger_answers(r, id) + std::string(h);
  }
  std::string agents() const { return prefix_ + "/agents/"; }
  std::string agent(std::string_view h) const { return agents() + std::string(h); }

  // The last path element of `key` below `dir` ("" when `key` is not directly below it).
  static std::string leaf(std::string_view key, std::string_view dir);

 private:
  std::string prefix_;
};

// Fleet, run and host names go into keys and paths: [A-Za-z0-9._-]+, not "." or "..".
bool valid_name(std::string_view name);

}  // namespace rocecap::fleet
