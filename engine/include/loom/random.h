// The state of loom's random number generator (Tensor::manual_seed sets it):
// Philox-4x32-10 keyed by the seed, one counter value per draw. Saving it and
// restoring it later repeats the draws made in between (torch's
// get_rng_state / set_rng_state).
#pragma once
#include <cstdint>

namespace loom {

struct RngState {
  uint64_t seed = 0;
  uint64_t draws = 0;  // draws made since seeding: the next draw's counter
};

RngState rng_state();
void set_rng_state(const RngState &state);

}  // namespace loom
