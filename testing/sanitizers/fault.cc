// fairbench-sanitizer-fault MODE: does one thing a sanitizer reports, so
// that child_reports_test can check such a report in a child fails a test.
//   race      two threads write one int without synchronisation (TSan)
//   overflow  reads one byte past a heap block (ASan)
//   ub        overflows a signed int (UBSan)
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

namespace {

int shared_counter = 0;

// noinline keeps both writes real accesses TSan instruments.
[[gnu::noinline]] void Bump() {
  for (int i = 0; i < 1000; ++i) shared_counter = shared_counter + 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fairbench-sanitizer-fault race|overflow|ub\n");
    return 2;
  }
  if (std::strcmp(argv[1], "race") == 0) {
    std::thread a(Bump);
    std::thread b(Bump);
    a.join();
    b.join();
    std::printf("%d\n", shared_counter);
  } else if (std::strcmp(argv[1], "overflow") == 0) {
    auto block = std::make_unique<char[]>(8);
    volatile int index = 8;
    std::printf("%d\n", block[index]);
  } else if (std::strcmp(argv[1], "ub") == 0) {
    volatile int big = 0x7fffffff;
    volatile int one = 1;
    std::printf("%d\n", big + one);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  }
  return 0;
}
