// Clang's thread-safety annotations (-Wthread-safety), as LevelDB's
// port/thread_annotations.h spells them: a member says which mutex guards
// it, a function which mutexes it needs held or must not hold, and clang
// checks every access at compile time. Other compilers see nothing.
//
//   Mutex mu_;
//   int n_ GUARDED_BY(mu_);
//   void AddLocked() REQUIRES(mu_);
//
// Abseil's legacy header (absl/base/internal/thread_annotations.h, which
// gRPC's headers bring in) defines some of the same names the same way:
// whichever comes first is kept. The mutex and its lock are in
// common/mutex.h. Clang checks with the
// preset "clang" (-Wthread-safety -Werror=thread-safety, every target) and
// the test thread_safety (every file of the release build that uses
// common/mutex.h).
#pragma once

#if defined(__clang__)
#define FAIRBENCH_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define FAIRBENCH_THREAD_ANNOTATION(x)
#endif

#ifndef CAPABILITY
#define CAPABILITY(x) FAIRBENCH_THREAD_ANNOTATION(capability(x))
#endif
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY FAIRBENCH_THREAD_ANNOTATION(scoped_lockable)
#endif
#ifndef GUARDED_BY
#define GUARDED_BY(x) FAIRBENCH_THREAD_ANNOTATION(guarded_by(x))
#endif
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) FAIRBENCH_THREAD_ANNOTATION(pt_guarded_by(x))
#endif
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) FAIRBENCH_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#endif
#ifndef ACQUIRED_AFTER
#define ACQUIRED_AFTER(...) FAIRBENCH_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#endif
#ifndef REQUIRES
#define REQUIRES(...) FAIRBENCH_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#endif
#ifndef ACQUIRE
#define ACQUIRE(...) FAIRBENCH_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#endif
#ifndef RELEASE
#define RELEASE(...) FAIRBENCH_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#endif
#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) FAIRBENCH_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#endif
#ifndef EXCLUDES
#define EXCLUDES(...) FAIRBENCH_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#endif
#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) FAIRBENCH_THREAD_ANNOTATION(assert_capability(x))
#endif
#ifndef RETURN_CAPABILITY
#define RETURN_CAPABILITY(x) FAIRBENCH_THREAD_ANNOTATION(lock_returned(x))
#endif
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS FAIRBENCH_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif
