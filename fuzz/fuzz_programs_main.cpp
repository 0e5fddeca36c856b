// loom_fuzz_programs: the program fuzzer's driver.
//   --seed S --count N [--seconds T]   run programs S.0, S.1, ... (stop at N or after T seconds)
//   --regressions DIR                  write each new (shrunk) failure to DIR as a .prog file
//   --replay FILE...                   run listings (regression cases); fail when one fails
//   --round-trip N                     listing -> parse -> listing is the identity on N programs
//   --max-steps K, --shrink-seconds X, --verbose (print every program)
// Exit status: 0 when every program matched libtorch, 1 on a failure, 2 on bad usage.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <variant>
#include <vector>

#include "fuzz_program.h"
#include "loom/backends.h"

namespace fs = std::filesystem;
using namespace loom::fuzz;

namespace {

struct Options {
  uint64_t seed = 1;
  int64_t count = 100;
  double seconds = 0;  // 0: no time limit
  int max_steps = 14;
  double shrink_seconds = 60;
  std::string regressions;
  std::vector<std::string> replay;
  int64_t round_trip = 0;
  bool verbose = false;
};

uint64_t program_seed(uint64_t seed, int64_t i) { return seed * 1000003u + static_cast<uint64_t>(i); }

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes a new regression case unless one with the same program exists.
void save_regression(const std::string &dir, const Program &p, const Verdict &v) {
  const std::string body = listing(p);
  fs::create_directories(dir);
  for (const auto &f : fs::directory_iterator(dir))
    if (f.path().extension() == ".prog") {
      try {
        if (listing(parse_listing(read_file(f.path()))) == body) return;
      } catch (const std::exception &) {
      }
    }
  const std::string name = v.kind.substr(0, v.kind.find(' ')) + "-" + std::to_string(p.seed) + ".prog";
  std::ofstream out(fs::path(dir) / name);
  out << "# A program the fuzzer found failing (fuzz/run), shrunk. Replay:\n"
      << "#   build/fuzz/loom_fuzz_programs --replay " << (fs::path(dir) / name).string() << "\n"
      << "# seed " << p.seed << "\n# found: " << v.message.substr(0, v.message.find('\n')) << "\n"
      << body;
  std::cout << "wrote regression case " << (fs::path(dir) / name).string() << "\n";
}

int fuzz(const Options &o) {
  // The programs' kernels compile ahead, in batches: a rehearsal of the run
  // gathers them (loom::backends::compile_ahead; it checks nothing), then the run
  // checks the programs against loaded kernels.
  loom::backends::compile_ahead([&] {
    for (int64_t i = 0; i < o.count; ++i) check(generate(program_seed(o.seed, i), o.max_steps));
  });
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int64_t run = 0, compared = 0, failures = 0, known = 0;
  for (int64_t i = 0; i < o.count && (o.seconds <= 0 || elapsed() < o.seconds); ++i) {
    const Program p = generate(program_seed(o.seed, i), o.max_steps);
    if (o.verbose) std::cout << "# seed " << p.seed << "\n" << listing(p) << std::flush;
    const Verdict v = check(p);
    ++run;
    compared += v.compared;
    if (v.pass) continue;
    if (const KnownFailure *k = known_failure(v)) {
      ++known;
      std::cout << "known bug (program " << i << ", seed " << p.seed << "): " << k->what << " [conformance/regressions/"
                << k->regression << "]\n";
      continue;
    }
    ++failures;
    std::cout << "FAILED program " << i << " (seed " << p.seed << "): " << v.message << "\nshrinking...\n" << std::flush;
    const Program small = shrink(p, v, o.shrink_seconds);
    const Verdict sv = check(small);
    std::cout << "minimal program (" << small.steps.size() << " of " << p.steps.size() << " steps):\n# seed " << p.seed
              << "\n" << listing(small) << "fails with: " << sv.message
              << "\nreplay: save the listing to a file and run loom_fuzz_programs --replay FILE\n\n" << std::flush;
    if (!o.regressions.empty()) save_regression(o.regressions, small, sv.pass ? v : sv);
  }
  std::cout << "fuzz: " << run << " programs in " << static_cast<int64_t>(elapsed()) << " s (" << compared
            << " compared with libtorch, " << run - compared << " rejected by both), " << known
            << " hit a known bug, " << failures << " new failures\n";
  if (run < o.count && o.seconds > 0) std::cout << "fuzz: the time limit stopped the run after " << run << " of " << o.count << "\n";
  return failures ? 1 : 0;
}

// A listing's program or, for one that does not parse, its failing verdict:
// it fails alone, and the files after it are still replayed.
using Listing = std::variant<Program, Verdict>;
Listing load_listing(const std::string &file) {
  try {
    return parse_listing(read_file(file));
  } catch (const std::exception &e) {
    Verdict v;
    v.pass = false;
    v.kind = "unreadable";
    v.message = e.what();
    return v;
  }
}
Verdict verdict(const Listing &l) {
  return std::holds_alternative<Program>(l) ? check(std::get<Program>(l)) : std::get<Verdict>(l);
}

int replay(const Options &o) {
  std::vector<Listing> listings;
  for (const std::string &f : o.replay) listings.push_back(load_listing(f));
  // Every listing's kernels compile ahead, in batches (as fuzz() does).
  loom::backends::compile_ahead([&] {
    for (const Listing &l : listings) verdict(l);
  });
  int bad = 0;
  for (size_t i = 0; i < listings.size(); ++i) {
    const Verdict v = verdict(listings[i]);
    std::cout << o.replay[i] << ": "
              << (v.pass ? (v.compared ? "matches libtorch" : "both reject") : "FAILED: " + v.message) << "\n";
    bad += !v.pass;
  }
  std::cout << "replay: " << o.replay.size() - bad << " of " << o.replay.size() << " listings pass\n";
  return bad ? 1 : 0;
}

int round_trip(const Options &o) {
  for (int64_t i = 0; i < o.round_trip; ++i) {
    const Program p = generate(program_seed(o.seed, i), o.max_steps);
    const std::string a = listing(p), b = listing(parse_listing(a));
    if (a != b) {
      std::cout << "round trip differs for seed " << p.seed << ":\n" << a << "---\n" << b;
      return 1;
    }
  }
  std::cout << "round trip: " << o.round_trip << " listings parse back to themselves\n";
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
        return argv[++i];
      };
      if (a == "--seed") o.seed = std::stoull(next());
      else if (a == "--count") o.count = std::stoll(next());
      else if (a == "--seconds") o.seconds = std::stod(next());
      else if (a == "--max-steps") o.max_steps = std::stoi(next());
      else if (a == "--shrink-seconds") o.shrink_seconds = std::stod(next());
      else if (a == "--regressions") o.regressions = next();
      else if (a == "--round-trip") o.round_trip = std::stoll(next());
      else if (a == "--verbose") o.verbose = true;
      else if (a == "--replay") {
        while (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) o.replay.push_back(argv[++i]);
        if (o.replay.empty()) throw std::runtime_error("--replay needs files");
      } else throw std::runtime_error("unknown argument " + a);
    }
  } catch (const std::exception &e) {
    std::cerr << "loom_fuzz_programs: " << e.what() << "\n";
    return 2;
  }
  try {
    if (!o.replay.empty()) return replay(o);
    if (o.round_trip) return round_trip(o);
    return fuzz(o);
  } catch (const std::exception &e) {
    std::cerr << "loom_fuzz_programs: " << e.what() << "\n";
    return 2;
  }
}
