// Internal to engine/grammar: the matcher's GBNF part (gbnf_matcher.cpp). matcher.cpp hands it the
// threads whose top frame is a Rule frame (FrameKind::Rule: node = the grammar's root SchemaNode,
// a = a position in node->grammar's elements). A thread's Rule frames are the bottom of its stack:
// the top one is where the parse is, the ones below hold the positions to return to. The frames of
// an external JSON value sit above them while it is read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/grammar/matcher.h"

namespace cellserve::engine::grammar {

// matcher.cpp's StartValue protocol: out[idx], the last thread of `out`, begins a JSON value of
// `value` with byte `b`. Pushes the value's first frame (one thread per anyOf alternative that
// takes `b`) or drops the thread. False, with `out` emptied, once the meter is spent.
using StartJsonValue = bool (*)(ThreadSet& out, size_t idx, const SchemaNode* value, uint8_t b, WorkMeter* meter);

// The state before any byte of a document of grammar root `root` (root.grammar set).
void initial_grammar_state(const SchemaNode& root, ThreadSet& out);

// Appends to `out` every thread that `thread` (top frame a Rule frame) becomes over byte `b`:
// expands rule references, one thread per alternative that may take `b` (a reference in tail
// position replaces its frame instead of pushing one; a thread that would hold more than
// limits.max_grammar_depth Rule frames dies), pops finished frames, and starts external JSON
// values through `start_value`. Charges `meter` as step() does: WorkMeter::kStepCost plus the
// frames of each thread made, plus one per element looked at. Without a meter, one with the
// program's max_mask_work bounds the call (an ambiguous grammar's parses can multiply). False, with
// `out` emptied, once the meter is spent.
bool step_grammar(const Stack& thread, uint8_t b, ThreadSet& out, WorkMeter* meter, StartJsonValue start_value);

// The fewest bytes that finish a Rule frame's alternative (the frames below count their own).
int64_t grammar_frame_cost(const Frame& f);

}  // namespace cellserve::engine::grammar
