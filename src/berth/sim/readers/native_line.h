// The direct reading of a plain native trace line, without building a JSON
// document: the lines that `berth convert` and scripts/philly-scale.py write,
// millions to a file, are read in a fraction of the document parser's time.
//
// A line is plain when it is one JSON object whose keys are among name,
// tenant, queue, priority, submit_time_s, duration_s and groups (a non-empty
// array of objects with keys among name, count, min_count, gpus,
// milli_per_gpu, cpu_milli and memory_mib), each once, whose strings are
// printable ASCII without escapes, and whose values are all in range with a
// valid job as the result. Such a line gives exactly the job the document
// parser gives (native_reader.cc; numbers are read as JSON numbers, decimal
// seconds rounded to the nearest double as strtod does).
//
// Every other line, including every bad one, is left to the document parser,
// which names what is wrong: ParsePlainJobLine then returns false and `j` is
// to be discarded. ReadOptions::full_json sends every line there (the oracle).
#pragma once

#include <string_view>

#include "berth/job/job.h"

namespace berth::sim {

// True when `line` is a plain job line; `j` (a default JobSpec on entry) is
// then its job.
bool ParsePlainJobLine(std::string_view line, job::JobSpec& j);

}  // namespace berth::sim
