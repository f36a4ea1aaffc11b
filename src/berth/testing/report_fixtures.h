// Helpers for the report tests: a synthetic replay-mode SimulateOutput (no
// simulation needed) and a tag-balance check for generated HTML/SVG.
#pragma once

#include <string>

#include "berth/sim/simulate.h"

namespace berth::testing {

// Three policies in replay mode with long series (thousands of points), JCT
// samples spanning seconds to days, one policy named "<b>&amp;\"odd'</b>"
// and one with no data at all. Deterministic.
sim::SimulateOutput SyntheticReplayOutput();

// "" if every opened element is closed in order (void HTML elements,
// self-closing tags, comments and the doctype aside); else what is wrong.
std::string CheckTagBalance(const std::string& doc);

}  // namespace berth::testing
