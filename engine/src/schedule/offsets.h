// Runtime view offsets (DESIGN 13): where a kernel reads or writes a buffer
// from some element on (a slice's start, a row, a batch of a dataset), the
// launch passes the buffer's pointer moved to near that element, as torch's
// storage_offset moves a tensor's data pointer, and the kernel's index math
// keeps only the remainder. Slices at different starts then run one kernel.
#pragma once
#include <cstdint>
#include <vector>

#include "uop/uop.h"

namespace loom::schedule {

// A pointer moves by a multiple of this many elements: a kernel's offsets
// keep their remainder modulo it, so every alignment the vector passes prove
// of an index (float4 and 8-byte half accesses on CUDA) holds of the address,
// and a buffer's alignment of 16 bytes or more still holds for any dtype.
constexpr int64_t kShiftUnit = 16;

// `ast` (a schedule item's kernel over `slots` DEFINE_GLOBALs) with each
// slot's views addressing from `shifts[slot]` elements on, the amounts
// returned in `shifts`: for each slot the lowest element any of its views can
// address, rounded down to a multiple of kShiftUnit (0 where a WRITE's
// indexed stores may address below its view). Every address stays inside the
// buffer: a gated load's fallback element 0 is the element at the shift.
uop::UOpRef shift_offsets(const uop::UOpRef &ast, size_t slots, shape::PoolVector<int64_t> &shifts);

}  // namespace loom::schedule
