// The target pod the pod templates' tests share (pod_templates_test.cc's
// golden files, pod_security_test.cc's Pod Security admission): Drogon as
// the study runs it, with a command, 4 CPUs and 1 GiB, nofile, a readiness
// path, a node, a selector and a toleration.
#pragma once

#include "controller/platform/kubernetes/pod_templates.h"

namespace fairbench::controller::k8s {

inline TargetPodParams DrogonTargetParams(const RunIdentity& run) {
  TargetPodParams p;
  p.run = run;
  p.target.name = "drogon";
  p.target.image = "example.org/fairbench/drogon:1.9.8";
  p.target.port = 8080;
  p.target.resources.cpu = api::CpuQuantity{4000};
  p.target.resources.memory = api::MemoryQuantity{1LL << 30};
  p.target.nofile = 65536;
  p.target.env = {{"DROGON_THREADS", "4"}, {"LOG_LEVEL", "warn"}};
  p.target.readiness = api::Readiness{"/health", std::chrono::seconds(20), std::nullopt};
  p.node = "node-target-1";
  p.placement.node_selector = {{"fairbench.dev/role", "target"}};
  p.placement.tolerations = {{"dedicated", "Equal", "bench", "NoSchedule", std::nullopt}};
  p.command = {"/usr/bin/drogon-server", "--port", "8080"};
  p.helper_image = "example.org/fairbench/agent:0.4.0";
  return p;
}

}  // namespace fairbench::controller::k8s
