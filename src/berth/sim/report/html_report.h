// The HTML report: one self-contained file (inline CSS and SVG, no scripts,
// nothing fetched) comparing the policies of one `berth simulate` run:
// cluster and trace summaries, a table of every policy's figures, and plots
// of GPU allocation over time, queue length over time and the JCT CDF (each
// plot only when some policy has data for it). All text is escaped; series are
// thinned to about 1,000 points so the file stays small. Deterministic: the
// same output gives the same bytes.
#pragma once

#include <string>

#include "berth/common/status.h"
#include "berth/sim/simulate.h"

namespace berth::sim {

std::string RenderHtmlReport(const SimulateOutput& out);
Status WriteHtmlReport(const SimulateOutput& out, const std::string& path);

}  // namespace berth::sim
