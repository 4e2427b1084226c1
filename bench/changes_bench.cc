// Change detection over many series, as `history check` runs it: 1,000
// series of 100 runs each, on one core (the goal: well under 5 s). Three
// mixes — all quiet, one in ten with a step, every one with a step (the worst
// case: each step costs a full permutation test) — and single series of
// growing length (the cost per shuffle grows as n²).
//
//   build/bin/changes_bench
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>
#include <vector>

#include "controller/changes/change_points.h"

namespace {

using fairbench::changes::FindChangePoints;
using fairbench::changes::Point;

std::vector<Point> Series(std::mt19937_64& engine, size_t length, bool step) {
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<Point> points(length);
  for (size_t i = 0; i < length; ++i) {
    const double level = step && i >= length * 6 / 10 ? 110.0 : 100.0;
    points[i] = {static_cast<double>(i), level * (1 + noise(engine))};
  }
  return points;
}

double Seconds(const std::vector<std::vector<Point>>& store, size_t* changes) {
  const auto start = std::chrono::steady_clock::now();
  *changes = 0;
  for (const auto& series : store) *changes += FindChangePoints(series).size();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
  std::mt19937_64 engine(1);
  std::printf("1,000 series of 100 points, 2 %% noise, default options (100 permutations, level 0.05):\n");
  for (const auto& [name, every] :
       {std::pair{"no step", 0}, std::pair{"a 10 % step in one of ten", 10}, std::pair{"a 10 % step in each", 1}}) {
    std::vector<std::vector<Point>> store;
    for (int i = 0; i < 1000; ++i) store.push_back(Series(engine, 100, every != 0 && i % every == 0));
    size_t changes = 0;
    const double seconds = Seconds(store, &changes);
    std::printf("  %s: %.3f s (%zu change points)\n", name, seconds, changes);
  }
  std::printf("one series with a 10 %% step:\n");
  for (size_t length : {100, 300, 1000, 3000}) {
    const std::vector<std::vector<Point>> store = {Series(engine, length, true)};
    size_t changes = 0;
    const double seconds = Seconds(store, &changes);
    std::printf("  %zu points: %.4f s (%zu change points)\n", length, seconds, changes);
  }
  return 0;
}
